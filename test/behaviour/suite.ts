// The shared behaviour suite: one set of specs of the public API (docs/api.md), run on every store
// by test/behaviour/<store>.test.ts. Every await is bounded; nothing asserts speed.
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import {
  ClosedError, ConflictError, ConnectionError, DeadlockError, SurelockError, InvalidArgumentError, LockLostError, LockTimeoutError, UnsupportedError, type Lease,
} from "../../src/index.js";
import { aborted, fresh, within, type World } from "./support.js";

const rising = (tokens: readonly bigint[]): void => {
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i} (${tokens[i]}) > token ${i - 1} (${tokens[i - 1]})`);
};

/** Runs every spec against `world`'s store. */
export function behaviour(world: World): void {
  before(() => world.start());
  afterEach(() => within(30_000, world.closeAll(), "closing the test's instances"));
  after(() => world.stop());

  describe(`mutex on ${world.store}`, () => {
    it("acquire and release: the lease's fields, isHeld, and fencing tokens strictly increasing", async () => {
      const s = world.surelock();
      const key = fresh();
      const m = s.mutex(key);
      const tokens: bigint[] = [];
      for (let i = 0; i < 4; i++) {
        const lease = await within(15_000, m.acquire());
        assert.equal(lease.key, key);
        assert.equal(lease.permits, 1);
        assert.equal(typeof lease.owner, "string");
        assert.equal(lease.held, true);
        assert.equal(lease.signal.aborted, false);
        assert.deepEqual([...lease.fencingTokens], [[key, lease.fencingToken]]);
        assert.equal(await within(15_000, lease.isHeld()), true);
        tokens.push(lease.fencingToken);
        await within(15_000, lease.release());
        assert.equal(lease.held, false);
        assert.equal(await within(15_000, lease.isHeld()), false);
        await lease.release(); // idempotent
      }
      rising(tokens);
    });

    it("tryAcquire: null while another instance holds the lock, the lease once it is free", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const held = await within(15_000, a.mutex(key).acquire());
      assert.equal(await within(15_000, b.mutex(key).tryAcquire()), null);
      await within(15_000, held.release());
      const next = await within(15_000, b.mutex(key).tryAcquire());
      assert.ok(next);
      assert.ok(next.fencingToken > held.fencingToken);
      await within(15_000, next.release());
    });

    it("a waiter is served when the holder releases, with a higher token", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const first = await within(15_000, a.mutex(key).acquire());
      let served = false;
      const waiting = b.mutex(key).acquire({ timeout: 30_000 }).then((l) => { served = true; return l; });
      // It waits: after a second try from the same instance shows the lock still held, it is not served.
      assert.equal(await within(15_000, a.mutex(key).tryAcquire()), null);
      assert.equal(served, false);
      await within(15_000, first.release());
      const second = await within(30_000, waiting);
      assert.ok(second.fencingToken > first.fencingToken);
      await within(15_000, second.release());
    });

    it("timeout: LockTimeoutError naming the user's key; acquireTimeout is the default wait", async () => {
      const a = world.surelock();
      const b = world.surelock({ acquireTimeout: 300 });
      const key = fresh();
      const held = await within(15_000, a.mutex(key).acquire());
      const e1 = await within(15_000, b.mutex(key).acquire({ timeout: 200 }).then(() => null, (e: unknown) => e));
      assert.ok(e1 instanceof LockTimeoutError, String(e1));
      assert.equal(e1.key, key);
      assert.equal(e1.timeoutMs, 200);
      const e2 = await within(15_000, b.mutex(key).acquire().then(() => null, (e: unknown) => e));
      assert.ok(e2 instanceof LockTimeoutError, String(e2));
      assert.equal(e2.timeoutMs, 300);
      await within(15_000, held.release());
    });

    it("signal: aborting a waiting acquire rejects it with the signal's reason", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const held = await within(15_000, a.mutex(key).acquire());
      const controller = new AbortController();
      const waiting = b.mutex(key).acquire({ timeout: 60_000, signal: controller.signal });
      const reason = new Error("give up");
      setTimeout(() => controller.abort(reason), 100);
      await assert.rejects(within(15_000, waiting), (e) => e === reason);
      await within(15_000, held.release());
      // Nothing of the abandoned wait blocks the next holder.
      const next = await within(15_000, b.mutex(key).acquire({ timeout: 15_000 }));
      await within(15_000, next.release());
    });

    it("withLock: returns the work's value, re-enters inside it (same token) and frees the lock after", async () => {
      const s = world.surelock();
      const other = world.surelock();
      const key = fresh();
      const m = s.mutex(key);
      const value = await within(30_000, m.withLock(async (outer) => {
        const inner = await m.withLock(async (lease) => {
          assert.equal(lease.fencingToken, outer.fencingToken);
          const again = await m.acquire({ timeout: 0 });
          assert.equal(again.fencingToken, outer.fencingToken);
          await again.release();
          return "inner";
        });
        assert.equal(outer.held, true);
        assert.equal(await other.mutex(key).tryAcquire(), null);
        return `${inner}+outer`;
      }));
      assert.equal(value, "inner+outer");
      assert.equal(await within(15_000, s.withLock(key, () => 42)), 42);
      const after = await within(15_000, other.mutex(key).tryAcquire());
      assert.ok(after);
      await within(15_000, after.release());
    });

    it("owner: acquisitions as one owner share the hold; another owner waits for both to release", async () => {
      const s = world.surelock();
      const key = fresh();
      const m = s.mutex(key);
      const a = await within(15_000, m.acquire({ owner: "worker-1" }));
      const b = await within(15_000, m.acquire({ owner: "worker-1", timeout: 5_000 }));
      assert.equal(b.fencingToken, a.fencingToken);
      assert.equal(b.owner, "worker-1");
      assert.equal(await within(15_000, m.tryAcquire({ owner: "worker-2" })), null);
      await within(15_000, a.release());
      assert.equal(await within(15_000, m.tryAcquire({ owner: "worker-2" })), null, "the owner's other entry still holds it");
      await within(15_000, b.release());
      const c = await within(15_000, m.acquire({ owner: "worker-2", timeout: 15_000 }));
      assert.ok(c.fencingToken > a.fencingToken);
      await within(15_000, c.release());
    });

    it("leaseTime: a fixed lease ends by itself (its signal aborts with LockLostError) and frees the lock", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const lease = await within(15_000, a.mutex(key).acquire({ leaseTime: 1_000 }));
      const reason = await within(20_000, aborted(lease.signal), "the fixed lease's end");
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.equal(reason.key, key);
      assert.equal(lease.held, false);
      const next = await within(20_000, b.mutex(key).acquire({ timeout: 20_000 }));
      assert.ok(next.fencingToken > lease.fencingToken);
      await within(15_000, next.release());
      await assert.rejects(lease.release(), LockLostError);
    });

    it("extend: renews now; the lease stays held and its signal quiet", async () => {
      const s = world.surelock();
      const lease = await within(15_000, s.mutex(fresh()).acquire());
      await within(15_000, lease.extend(6_000));
      await within(15_000, lease.extend());
      assert.equal(lease.held, true);
      assert.equal(await within(15_000, lease.isHeld()), true);
      assert.equal(lease.signal.aborted, false);
      await within(15_000, lease.release());
      await assert.rejects(lease.extend(), (e: unknown) => (e as Error).name === "LockNotHeldError");
    });

    it("a lease whose key is force-released: its signal aborts with LockLostError, withLock rejects with it", async () => {
      const s = world.surelock();
      const key = fresh();
      let seen: unknown;
      const run = s.mutex(key).withLock(async (lease) => {
        await world.forceRelease(s.prefix, key);
        seen = await within(20_000, aborted(lease.signal), "the loss's signal");
        return "done";
      });
      await assert.rejects(within(30_000, run), LockLostError);
      assert.ok(seen instanceof LockLostError, String(seen));
      assert.equal(seen.key, key);
    });

    if (world.store === "etcd") {
      it("guard.commit(lease, operations): an etcd transaction that goes through only while the lease holds", async () => {
        const s = world.surelock();
        const next = world.surelock();
        const key = fresh();
        const data = Buffer.from(`${s.prefix}data/${key}`);
        const put = (value: string): object[] => [{ request_put: { key: data, value: Buffer.from(value) } }, { request_range: { key: data } }];
        const guard = s.guard("res");
        const lease = await s.mutex(key).acquire();
        const first = await guard.commit(lease, put("first"));
        assert.equal(first.written, true);
        assert.equal(first.written && first.responses.length, 2);
        // Taken over behind the holder's back: the server refuses its transaction before it knows.
        await world.forceRelease(s.prefix, key);
        const newer = await within(20_000, next.mutex(key).acquire({ timeout: 15_000 }), "the next holder");
        assert.ok(newer.fencingToken > lease.fencingToken);
        assert.deepEqual(await next.guard("res").commit(newer, put("second")).then((r) => r.written), true);
        assert.deepEqual(await guard.commit(lease, put("stale")), { written: false });
        const [, read] = (await next.guard("res").commit(newer, [{ request_range: { key: data } }]).then((r) => (r.written ? [0, r.responses] : [0, []]))) as [number, { response_range?: { kvs: { value: Buffer }[] } }[]];
        assert.equal(read[0]?.response_range?.kvs[0]?.value.toString(), "second", "the newer holder's write stands");
        await assert.rejects(guard.commit(lease, []), InvalidArgumentError);
        await assert.rejects(guard.commit({ key, fencingToken: 1n }, put("x")), InvalidArgumentError);
        await newer.release();
      });
    }

    it("close(): held leases end with reason closed, waits reject with ClosedError, new primitives are refused", async () => {
      const s = world.surelock();
      const other = world.surelock();
      const key = fresh();
      const held = await within(15_000, s.mutex(key).acquire());
      const blocker = await within(15_000, other.mutex(`${key}-b`).acquire());
      const waiting = s.mutex(`${key}-b`).acquire({ timeout: 60_000 }).then(() => null, (e: unknown) => e);
      await within(30_000, s.close());
      const reason = held.signal.reason as unknown;
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.equal(reason.reason, "closed");
      assert.ok((await within(15_000, waiting)) instanceof ClosedError);
      assert.throws(() => s.mutex(key), ClosedError);
      await within(15_000, s.close()); // idempotent
      // The close gave the lock back: another instance takes it at once.
      const next = await within(15_000, other.mutex(key).acquire({ timeout: 15_000 }));
      await within(15_000, Promise.all([next.release(), blocker.release()]));
    });
  });

  describe(`readWriteLock on ${world.store}`, () => {
    it("readers share, a writer excludes readers and writers", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const r1 = await within(15_000, a.readWriteLock(key).read().acquire());
      const r2 = await within(15_000, b.readWriteLock(key).read().tryAcquire());
      assert.ok(r2, "a second reader shares");
      assert.equal(await within(15_000, b.readWriteLock(key).write().tryAcquire()), null);
      await within(15_000, Promise.all([r1.release(), r2.release()]));
      const w = await within(15_000, b.readWriteLock(key).write().acquire({ timeout: 15_000 }));
      assert.equal(await within(15_000, a.readWriteLock(key).read().tryAcquire()), null);
      assert.equal(await within(15_000, a.readWriteLock(key).write().tryAcquire()), null);
      await within(15_000, w.release());
      const r3 = await within(15_000, a.readWriteLock(key).read().acquire({ timeout: 15_000 }));
      assert.ok(r3.fencingToken > w.fencingToken);
      await within(15_000, r3.release());
    });

    it("a read inside the write side's withLock goes in; the write side inside a read is a DeadlockError", async () => {
      const s = world.surelock();
      const rw = s.readWriteLock(fresh());
      const got = await within(30_000, rw.write().withLock(async () => {
        const read = await rw.read().acquire({ timeout: 5_000 });
        await read.release();
        return rw.write().withLock(() => "re-entered");
      }));
      assert.equal(got, "re-entered");
      await assert.rejects(within(30_000, rw.read().withLock(() => rw.write().acquire())), DeadlockError);
    });
  });

  describe(`semaphore on ${world.store}`, () => {
    it("counted permits: taken at once, given back by the lease, never more than the limit", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const two = await within(15_000, a.semaphore(key, { permits: 3 }).acquire({ permits: 2 }));
      assert.equal(two.permits, 2);
      assert.equal(await within(15_000, b.semaphore(key, { permits: 3 }).tryAcquire({ permits: 2 })), null);
      const one = await within(15_000, b.semaphore(key, { permits: 3 }).tryAcquire());
      assert.ok(one);
      assert.equal(one.permits, 1);
      assert.equal(await within(15_000, b.semaphore(key, { permits: 3 }).tryAcquire()), null);
      await within(15_000, two.release());
      const more = await within(15_000, b.semaphore(key, { permits: 3 }).acquire({ permits: 2, timeout: 15_000 }));
      await within(15_000, Promise.all([one.release(), more.release()]));
      await assert.rejects(a.semaphore(key, { permits: 3 }).acquire({ permits: 4 }), InvalidArgumentError);
    });

    it("a caller with another limit while the semaphore is in use gets a ConflictError", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const key = fresh();
      const held = await within(15_000, a.semaphore(key, { permits: 2 }).acquire());
      await assert.rejects(within(15_000, b.semaphore(key, { permits: 5 }).acquire({ timeout: 2_000 })), ConflictError);
      await within(15_000, held.release());
    });

    it(`setPermits(): ${world.store === "redis" ? "changes the stored limit" : "UnsupportedError"}`, async () => {
      const s = world.surelock();
      const sem = s.semaphore(fresh(), { permits: 1 });
      if (world.store === "redis") {
        await within(15_000, sem.setPermits(2));
        assert.equal(sem.permits, 2);
      } else {
        await assert.rejects(within(15_000, sem.setPermits(2)), UnsupportedError);
      }
    });
  });

  describe(`multiLock on ${world.store}`, () => {
    it("takes every key as one hold, with a rising token per key, and excludes each key's mutex", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const k1 = fresh("m");
      const k2 = fresh("m");
      const solo = await within(15_000, a.mutex(k2).acquire());
      await within(15_000, solo.release());
      const lease = await within(15_000, a.multiLock([k1, k2]).acquire());
      assert.deepEqual([...lease.fencingTokens.keys()], [k1, k2]);
      assert.equal(lease.fencingToken, lease.fencingTokens.get(k1));
      assert.ok(lease.fencingTokens.get(k2)! > solo.fencingToken);
      assert.equal(await within(15_000, b.mutex(k1).tryAcquire()), null);
      assert.equal(await within(15_000, b.mutex(k2).tryAcquire()), null);
      assert.equal(await within(15_000, b.multiLock([k2, k1]).tryAcquire()), null);
      await within(15_000, lease.release());
      const m = await within(15_000, b.mutex(k2).acquire({ timeout: 15_000 }));
      assert.ok(m.fencingToken > lease.fencingTokens.get(k2)!);
      await within(15_000, m.release());
    });

    it("re-enters inside its withLock; a mutex of one of its keys there is a DeadlockError", async () => {
      const s = world.surelock();
      const k1 = fresh("m");
      const k2 = fresh("m");
      const ml = s.multiLock([k1, k2]);
      await within(30_000, ml.withLock(async (outer: Lease) => {
        const again = await ml.acquire({ timeout: 5_000 });
        assert.deepEqual([...again.fencingTokens], [...outer.fencingTokens]);
        await again.release();
        await assert.rejects(s.mutex(k1).acquire({ timeout: 1_000 }), DeadlockError);
      }));
      const after = await within(15_000, s.mutex(k1).acquire({ timeout: 15_000 }));
      await within(15_000, after.release());
    });
  });

  describe(`latch on ${world.store}`, () => {
    it("opens at its count of distinct ids, wakes its waiters, and a replayed id counts once", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const name = fresh("latch");
      const latch = a.latch(name, { count: 2 });
      assert.equal(await within(15_000, latch.count()), 2);
      await assert.rejects(within(15_000, latch.wait({ timeout: 0 })), LockTimeoutError);
      let opened = false;
      const waiting = b.latch(name, { count: 2 }).wait({ timeout: 60_000 }).then(() => { opened = true; });
      assert.equal(await within(15_000, latch.countDown({ id: "first" })), 1);
      assert.equal(await within(15_000, latch.countDown({ id: "first" })), 1, "a replay counts once");
      assert.equal(opened, false);
      assert.equal(await within(15_000, b.latch(name, { count: 2 }).countDown()), 0);
      await within(30_000, waiting, "the waiter's wake-up");
      assert.equal(await within(15_000, latch.count()), 0);
      await within(15_000, latch.wait({ timeout: 0 }));
      if (world.store !== "etcd") {
        await assert.rejects(within(15_000, a.latch(name, { count: 3 }).count()), ConflictError);
      }
    });

    it("a wait ends with the signal's reason, and with ClosedError at close()", async () => {
      const s = world.surelock();
      const latch = s.latch(fresh("latch"), { count: 1 });
      const controller = new AbortController();
      const reason = new Error("stop waiting");
      const aborted = latch.wait({ signal: controller.signal });
      setTimeout(() => controller.abort(reason), 50);
      await assert.rejects(within(15_000, aborted), (e) => e === reason);
      const closing = latch.wait().then(() => null, (e: unknown) => e);
      await within(30_000, s.close());
      assert.ok((await within(15_000, closing)) instanceof ClosedError);
    });
  });

  describe(`election on ${world.store}`, () => {
    it("one leader at a time, with its value; the next campaign leads once it resigns, with a higher token", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const name = fresh("election");
      const ea = a.election(name);
      const eb = b.election(name);
      assert.equal(await within(15_000, ea.leader()), null);
      const first = await within(15_000, ea.campaign({ value: "a:1" }));
      const seen = await within(15_000, eb.leader());
      assert.ok(seen);
      assert.equal(seen.value, "a:1");
      assert.equal(seen.owner, first.owner);
      assert.equal(seen.fencingToken, first.fencingToken);
      let led = false;
      const second = eb.campaign({ value: "b:1", timeout: 60_000 }).then((l) => { led = true; return l; });
      await within(15_000, ea.proclaim("a:2"));
      assert.equal((await within(15_000, eb.leader()))?.value, "a:2");
      assert.equal(led, false);
      await within(15_000, ea.resign());
      const lease = await within(30_000, second);
      assert.ok(lease.fencingToken > first.fencingToken);
      assert.equal((await within(15_000, ea.leader()))?.value, "b:1");
      await within(15_000, eb.resign());
    });

    it("observe(): the leader now, then each change", async () => {
      const a = world.surelock();
      const b = world.surelock();
      const name = fresh("election");
      const controller = new AbortController();
      const seen: (string | null)[] = [];
      const watching = (async () => {
        for await (const leader of b.election(name).observe({ signal: controller.signal })) {
          seen.push(leader?.value ?? null);
          if (leader?.value === "second") controller.abort();
        }
      })();
      const e = a.election(name);
      await within(15_000, e.campaign({ value: "first" }));
      await within(15_000, e.proclaim("second"));
      await within(30_000, watching, "the observer seeing the proclaim");
      assert.equal(seen.at(-1), "second");
      await within(15_000, e.resign());
    });
  });

  describe(`options and stores on ${world.store}`, () => {
    it("exactly one of redis, postgres and etcd", () => {
      const mine = world.option();
      const other = world.store === "redis" ? { postgres: { connect: async () => { throw new Error("never"); } } } : { redis: {} };
      assert.throws(() => new (world.surelock().constructor as typeof import("../../src/index.js").Surelock)({ ...mine, ...other } as never), InvalidArgumentError);
    });

    it("a store that cannot be reached: acquire and tryAcquire reject with a typed error within their bound, close() settles", async () => {
      const Surelock = world.surelock().constructor as typeof import("../../src/index.js").Surelock;
      const s = new Surelock({ ...world.unreachable(), commandTimeout: 500, ttl: 3_000 });
      try {
        const e1 = await within(20_000, s.mutex(fresh()).acquire({ timeout: 2_000 }).then(() => null, (e: unknown) => e));
        assert.ok(e1 instanceof SurelockError, String(e1));
        assert.ok(e1 instanceof LockTimeoutError || e1 instanceof ConnectionError, String(e1));
        const e2 = await within(20_000, s.mutex(fresh()).tryAcquire().then(() => null, (e: unknown) => e));
        assert.ok(e2 instanceof ConnectionError || e2 === null, String(e2));
      } finally {
        await within(20_000, s.close(), "close() of the unreachable instance");
      }
    });

    it("what a store cannot offer is refused with a typed error naming it", async () => {
      const s = world.surelock();
      assert.equal(s.store, world.store);
      if (world.store === "redis") {
        return assert.rejects(s.guard("res").check({ query: async () => ({}) }, 1n), UnsupportedError);
      }
      const Surelock = s.constructor as typeof import("../../src/index.js").Surelock;
      assert.throws(() => new Surelock({ ...world.option(), replicas: { count: 1, timeout: 100 } }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.replicas");
      assert.throws(() => new Surelock({ ...world.option(), counterRetention: 600_000 }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.counterRetention");
      if (world.store === "etcd") {
        assert.throws(() => s.mutex(fresh(), { ttl: 1_234 }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.ttl");
        await assert.rejects(s.guard("res").check({ query: async () => ({}) }, 1n), UnsupportedError);
        await assert.rejects(s.guard("res").write(1n, "SET", "k", "v"), UnsupportedError);
      } else {
        const lease = await s.mutex(fresh()).acquire();
        await assert.rejects(s.guard("res").commit(lease, [{}]), UnsupportedError);
        await lease.release();
      }
    });
  });
}
