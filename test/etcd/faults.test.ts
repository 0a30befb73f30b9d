// The etcd store under real faults: a client cut off from the cluster (its keep-alives stall past
// the TTL), a cluster nobody can reach, the leader killed under contention, a watch revision compacted.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClosedError, ConnectionError, LockLostError } from "../../src/errors.js";
import type { Held } from "../../src/etcd/index.js";
import { aborted, within } from "../helpers/fixtures.js";
import { fresh, startWorld, uid, type EtcdWorld } from "./support.js";

describe("etcd store: faults on a 3-member cluster", () => {
  let world: EtcdWorld;
  before(async () => {
    world = await startWorld();
  });
  after(() => world.stop());

  it("a keep-alive stalled past the TTL: the loss fires at held-until, before anyone else gets the lock", async () => {
    const cut = world.store({ members: [0] });
    const other = world.store({ members: [1, 2] });
    const name = uid("stall/");
    const held = await cut.acquire(fresh(name));
    const waiting = other.acquire(fresh(name, { timeoutMs: 20_000 })).then((h) => ({ h, at: performance.now() }));
    world.cluster.members[0]!.proxy.blackhole();
    try {
      const reason = await aborted(held.signal, 10_000);
      const lostAt = performance.now();
      const until = held.heldUntil();
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.ok(["unreachable", "expired"].includes(reason.reason));
      assert.ok(lostAt >= until - 5, `not before held-until (${(until - lostAt).toFixed(0)} ms early)`);
      assert.ok(lostAt - until < 500, `on time (${(lostAt - until).toFixed(0)} ms late)`);
      const next = await within(15_000, waiting, "the other store's grant");
      assert.ok(next.at > lostAt, "no overlap: the next holder came after the loss");
      assert.ok(next.h.ref.token > held.ref.token);
      await other.release(next.h.ref, next.h.ref.hold);
    } finally {
      world.cluster.members[0]!.proxy.pass();
    }
  });

  it("an unreachable cluster: a ConnectionError within the request bound, never a hang", async () => {
    const s = world.store({ members: [0, 1, 2], requestTimeoutMs: 800 });
    for (const m of world.cluster.members) m.proxy.blackhole();
    try {
      const started = performance.now();
      await within(8_000, assert.rejects(s.acquire(fresh(uid("down/"), { timeoutMs: 60_000 })), ConnectionError), "the acquire");
      assert.ok(performance.now() - started < 4_000, `bounded (${(performance.now() - started).toFixed(0)} ms)`);
    } finally {
      for (const m of world.cluster.members) m.proxy.pass();
    }
  });

  it("the leader killed under contention: no two holders at once, fenced counter exact, tokens rising", async (t) => {
    // A known defect of the etcd3 client, open under issue 31: when its shared watch stream is
    // re-established after a leader change, a response for a watcher it already dropped is thrown
    // from a stream handler ("Failed to find watcher for IWatchResponse") and nothing can catch it.
    // It is reported here and does not end the process; every other uncaught error still does.
    const etcd3Defects: unknown[] = [];
    // The test runner's own listener would count it as this test's failure: it hears the others.
    const runner = process.listeners("uncaughtException");
    const known = (error: Error, origin: NodeJS.UncaughtExceptionOrigin): void => {
      if (error.message.includes("Failed to find watcher for IWatchResponse")) etcd3Defects.push(error);
      else for (const listener of runner) listener(error, origin);
    };
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", known);
    t.after(() => {
      process.off("uncaughtException", known);
      for (const listener of runner) process.on("uncaughtException", listener);
      if (etcd3Defects.length > 0) t.diagnostic(`etcd3 threw "Failed to find watcher" ${etcd3Defects.length} time(s) (issue 31)`);
    });
    const stores = [world.store(), world.store(), world.store()];
    const name = uid("leader/");
    const counter = uid("counter/");
    const client = world.client();
    await client.put(counter).value("0");
    // Who is inside now: a second holder while the first still trusts its hold is an overlap.
    let current: Held | undefined;
    let overlaps = 0;
    const failures: unknown[] = [];
    const readFailures: unknown[] = [];
    // The workers stop on the wall clock, whatever the cluster does (the test must end even if the
    // fault flow stalls); the checks are about safety, and a rate would only measure the machine.
    const stopAt = performance.now() + 6_000;
    const more = (): boolean => performance.now() < stopAt;
    // What each worker is doing, for the message when they do not finish.
    const phase: string[] = [];
    const read = async (): Promise<number> => {
      const res = await client.kv.range({ key: Buffer.from(counter) }, { deadline: new Date(Date.now() + 2_000) });
      return Number(res.kvs[0]!.value.toString());
    };
    const worker = async (i: number): Promise<void> => {
      const store = stores[i % stores.length]!;
      while (more()) {
        let h: Held;
        phase[i] = "acquire";
        try {
          h = await store.acquire(fresh(name, { timeoutMs: 10_000 }));
        } catch (error) {
          failures.push(error);
          // A refusal can come at once (the client's circuit breaker): yield to timers before retrying.
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        if (current && !current.signal.aborted) overlaps++;
        current = h;
        try {
          phase[i] = "read";
          const value = await read().catch((e: unknown) => {
            readFailures.push(e);
            throw e;
          });
          phase[i] = "fenced";
          // A second key per write, with its token: a write whose reply is lost still counts.
          await store.fenced(h.ref, [
            { request_put: { key: Buffer.from(counter), value: Buffer.from(String(value + 1)) } },
            { request_put: { key: Buffer.from(`${counter}/${h.ref.hold}`), value: Buffer.from(h.ref.token.toString()) } },
          ]);
        } catch (error) {
          failures.push(error);
        } finally {
          if (current === h) current = undefined;
        }
        phase[i] = "release";
        await store.release(h.ref, h.ref.hold).catch((e: unknown) => failures.push(e));
      }
      phase[i] = "done";
    };
    const workers = Array.from({ length: 6 }, (_, i) => worker(i));
    await new Promise((r) => setTimeout(r, 1_500));
    const leader = await world.cluster.leader();
    await leader.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    await leader.restart();
    await within(40_000, Promise.all(workers), "the workers").catch((e: unknown) => {
      throw new Error(`${String(e)}; phases: ${phase.join(", ")}`);
    });
    const landed = (await client.kv.range({ key: Buffer.from(`${counter}/`), range_end: Buffer.from(`${counter}0`), sort_target: "Create", sort_order: "Ascend" })).kvs;
    const done = landed.length;
    const tokens = landed.map((kv) => BigInt(kv.value.toString()));
    assert.equal(overlaps, 0, "never two holders");
    assert.ok(done > 0, `progress (${done} sections)`);
    assert.equal(Number(await client.get(counter).string()), done, "every fenced write counted once");
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, "tokens rise in commit order");
    for (const f of failures.filter((x) => !readFailures.includes(x))) {
      assert.ok(f instanceof ConnectionError || f instanceof LockLostError, `typed failure: ${String(f)}`);
    }
  });

  it("a watch from a compacted revision fails rather than staying silent (the store then re-reads the queue)", async () => {
    const client = world.client();
    const key = uid("compact/");
    const first = await client.put(key).value("1").exec();
    await client.put(key).value("2");
    const latest = await client.put(key).value("3").exec();
    await client.kv.compact({ revision: latest.header.revision, physical: true });
    const w = client.watch().key(key).startRevision(first.header.revision).only("delete").watcher();
    const failed = new Promise<unknown>((resolve) => w.on("error", resolve));
    assert.ok((await within(5_000, failed, "the watch's failure")) instanceof Error);
    void w.cancel().catch(() => undefined);
    // A waiter whose queue was written, compacted and released still gets the lock.
    const s = world.store();
    const name = uid("compact-lock/");
    const h = await s.acquire(fresh(name));
    const w2 = s.acquire(fresh(name, { timeoutMs: 10_000 }));
    const now = await client.put(uid("bump/")).value("x").exec();
    await client.kv.compact({ revision: now.header.revision, physical: true });
    await s.release(h.ref, h.ref.hold);
    const next = await within(5_000, w2, "the waiter");
    await s.release(next.ref, next.ref.hold);
  });

  it("a waiter whose lease ends while it waits never becomes a holder (ownership is read again after the wake-up)", async () => {
    const holder = world.store();
    const waiter = world.store();
    const third = world.store();
    const name = uid("revoked/");
    const h = await holder.acquire(fresh(name));
    const waiting = waiter.acquire(fresh(name, { timeoutMs: 20_000 }));
    for (let t = 0; t < 200 && (await holder.inspect(name)).waiters.length < 1; t++) await new Promise((r) => setTimeout(r, 5));
    const lease = (await holder.inspect(name)).waiters[0]!.lease;
    // The waiter's lease ends in etcd (as if it expired there); its holder then frees the lock.
    await world.client().leaseClient.leaseRevoke({ ID: lease });
    await holder.release(h.ref, h.ref.hold);
    await within(10_000, assert.rejects(waiting, (e: unknown) => e instanceof LockLostError && e.reason === "expired"), "the waiter's failure");
    const next = await third.acquire(fresh(name, { timeoutMs: 5_000 }));
    const info = await third.inspect(name);
    assert.deepEqual(info.holders.map((x) => x.hold), [next.ref.hold], "the third store alone holds it");
    await third.release(next.ref, next.ref.hold);
  });

  it("a member cut off from its clients: a waiter still gets the lock (re-reads do not wait for a silent watch)", async () => {
    const holder = world.store({ members: [1, 2] });
    const waiter = world.store({ sessionTtlMs: 10_000, requestTimeoutMs: 1_000, recheckMs: 500 });
    const name = uid("cut/");
    const h = await holder.acquire(fresh(name));
    const waiting = waiter.acquire(fresh(name, { timeoutMs: 30_000 }));
    for (let t = 0; t < 200 && (await holder.inspect(name)).waiters.length < 1; t++) await new Promise((r) => setTimeout(r, 5));
    world.cluster.members[0]!.proxy.blackhole();
    try {
      await holder.release(h.ref, h.ref.hold);
      const got = await within(20_000, waiting, "the waiter's grant");
      assert.ok(got.ref.token > h.ref.token);
      await waiter.release(got.ref, got.ref.hold).catch(() => undefined);
    } finally {
      world.cluster.members[0]!.proxy.pass();
    }
  });

  it("close() ends every hold and pending acquire with ClosedError, and frees the keys", async () => {
    const s = world.store();
    const other = world.store();
    const name = uid("close/");
    const h = await s.acquire(fresh(name));
    const blocked = uid("close-b/");
    const bh = await other.acquire(fresh(blocked));
    const pending = s.acquire(fresh(blocked, { timeoutMs: 20_000 })).then(() => undefined, (e: unknown) => e);
    for (let t = 0; t < 200 && (await other.inspect(blocked)).waiters.length < 1; t++) await new Promise((r) => setTimeout(r, 5));
    await s.close();
    assert.ok((await aborted(h.signal, 1_000)) instanceof ClosedError);
    assert.ok((await pending) instanceof ClosedError);
    await assert.rejects(s.acquire(fresh(name)), ClosedError);
    const next = await other.acquire(fresh(name, { timeoutMs: 0 }));
    assert.equal((await other.inspect(blocked)).waiters.length, 0, "the pending waiter's key went with the session");
    await other.release(next.ref, next.ref.hold);
    await other.release(bh.ref, bh.ref.hold);
  });
});
