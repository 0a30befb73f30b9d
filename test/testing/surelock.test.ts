/**
 * surelock's public API, unchanged, on MemoryRedis: the whole stack (stores, scripts, waiting
 * room, watchdog, quorum mode) runs against the in-memory server, the way a user's unit tests
 * would use surelock/testing.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LockLostError, QuorumError, Surelock } from "../../src/index.js";
import { Gate, MemoryRedis, VirtualClock } from "../../src/testing/index.js";
import { aborted, startsWaiting, within } from "../helpers/fixtures.js";

describe("surelock on MemoryRedis", () => {
  it("mutex: acquire, exclusion, release, strictly increasing fencing tokens", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    const first = await locks.mutex("orders:1").acquire();
    assert.equal(await locks.mutex("orders:1").tryAcquire(), null);
    await first.release();
    const second = await locks.mutex("orders:1").acquire();
    assert.ok(second.fencingToken > first.fencingToken);
    assert.equal(await redis.command(["HGET", "surelock:{orders:1}:lock", "o"]), second.owner);
    await second.release();
    assert.equal(await redis.command(["HEXISTS", "surelock:{orders:1}:lock", "o"]), 0);
    await locks.close();
  });

  it("withLock re-enters in the same flow and keeps other processes out under contention", async () => {
    const redis = new MemoryRedis();
    const processes = [0, 1, 2].map(() => new Surelock({ redis: redis.duplicate() }));
    let inside = 0;
    let most = 0;
    let sections = 0;
    await Promise.all(processes.flatMap((locks) => [0, 1, 2].map(async () => {
      for (let i = 0; i < 5; i++) {
        await locks.withLock("hot", async (outer) => {
          inside++;
          most = Math.max(most, inside);
          await locks.withLock("hot", async (inner) => assert.equal(inner.fencingToken, outer.fencingToken));
          await new Promise((resolve) => setImmediate(resolve));
          sections++;
          inside--;
        });
      }
    })));
    assert.equal(most, 1);
    assert.equal(sections, 45);
    await Promise.all(processes.map((l) => l.close()));
  });

  it("a waiter is woken by the release; with the wake-up lost, the safety poll still gets it there", async () => {
    const redis = new MemoryRedis();
    const holder = new Surelock({ redis: redis.duplicate() });
    const waiter = new Surelock({ redis, pollInterval: 50 });
    const held = await holder.mutex("k").acquire();
    const waits = startsWaiting("k");
    const next = waiter.mutex("k").acquire({ timeout: 5_000 });
    await waits;
    await held.release();
    const lease = await within(2_000, next, "the woken waiter");
    await lease.release();
    // Again, with the release's announcement lost on its way.
    const again = await holder.mutex("k").acquire();
    const waitsAgain = startsWaiting("k");
    const polling = waiter.mutex("k").acquire({ timeout: 5_000 });
    await waitsAgain;
    redis.loseNextMessage();
    await again.release();
    await (await within(2_000, polling, "the polling waiter")).release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it("tokens stay positive and increasing when the server clock reads 0 (epochMs 0 on a virtual clock)", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock, epochMs: 0 });
    const locks = new Surelock({ redis, clock });
    const tokensOf = async (take: () => Promise<{ fencingToken: bigint; release(): Promise<void> }>): Promise<bigint[]> => {
      const tokens: bigint[] = [];
      for (let i = 0; i < 3; i++) {
        const lease = await take();
        tokens.push(lease.fencingToken);
        await lease.release();
      }
      return tokens;
    };
    for (const [what, take] of [
      ["mutex", () => locks.mutex("zero:m").acquire()],
      ["semaphore", () => locks.semaphore("zero:s", { permits: 2 }).acquire()],
      ["write side", () => locks.readWriteLock("zero:rw").write().acquire()],
      ["read side", () => locks.readWriteLock("zero:rw").read().acquire()],
    ] as const) {
      const tokens = await tokensOf(take);
      assert.ok(tokens.every((t, i) => t > 0n && (i === 0 || t > (tokens[i - 1] as bigint))), `${what}: ${tokens.join(", ")}`);
    }
    await locks.close();
  });

  it("semaphore permits and read-write lock sides", async () => {
    const locks = new Surelock({ redis: new MemoryRedis() });
    const sem = locks.semaphore("pool", { permits: 2 });
    const permits = [await sem.acquire(), await sem.acquire()];
    assert.equal(await sem.tryAcquire(), null);
    await permits[0]?.release();
    const third = await sem.tryAcquire();
    assert.ok(third);
    await Promise.all([permits[1]?.release(), third.release()]);
    const rw = locks.readWriteLock("doc");
    const readers = [await rw.read().acquire(), await rw.read().acquire()];
    assert.equal(await rw.write().tryAcquire(), null);
    for (const r of readers) await r.release();
    const writer = await rw.write().acquire();
    assert.equal(await rw.read().tryAcquire({ owner: "someone-else" }), null);
    await writer.release();
    await locks.close();
  });

  it("counted permits and setPermits(): n permits at once, a raise serves the waiter it lets in", async () => {
    const redis = new MemoryRedis();
    const [a, b] = [new Surelock({ redis }), new Surelock({ redis: redis.duplicate() })];
    const sem = a.semaphore("batch", { permits: 3 });
    const two = await sem.acquire({ permits: 2 });
    assert.equal(two.permits, 2);
    assert.equal(await sem.tryAcquire({ permits: 2 }), null);
    const waits = startsWaiting("batch");
    const big = b.semaphore("batch", { permits: 3 }).acquire({ permits: 3 });
    await waits;
    await sem.setPermits(5);
    const three = await within(2_000, big);
    assert.equal(await redis.command(["HGET", "surelock:sem:{batch}:state", "u"]), "5");
    await sem.setPermits(1);
    await Promise.all([two.release(), three.release()]);
    const one = await sem.tryAcquire();
    assert.ok(one);
    assert.equal(await b.semaphore("batch", { permits: 3 }).tryAcquire(), null, "the lowered limit holds, and is adopted");
    await one.release();
    await Promise.all([a.close(), b.close()]);
  });

  it("a lease whose key vanished is reported lost through its signal", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    const lease = await locks.mutex("gone").acquire();
    await redis.command(["DEL", "surelock:{gone}:lock"]);
    assert.equal(await lease.isHeld(), false);
    const reason = await aborted(lease.signal, 1_000);
    assert.ok(reason instanceof LockLostError);
    await assert.rejects(lease.release(), LockLostError);
    await locks.close();
  });

  it("quorum mode over three in-memory nodes survives one failing node and refuses with two", async () => {
    const nodes = [new MemoryRedis(), new MemoryRedis(), new MemoryRedis()];
    const locks = new Surelock({ redis: nodes });
    nodes[0]?.intercept(() => ({ kind: "fail" }));
    const lease = await locks.mutex("q").acquire({ timeout: 0 });
    assert.equal(await nodes[1]?.command(["HGET", "surelock:{q}:lock", "o"]), lease.owner);
    await lease.release();
    nodes[1]?.intercept(() => ({ kind: "fail" }));
    await assert.rejects(locks.mutex("q").acquire({ timeout: 0 }), QuorumError);
    for (const n of nodes) n.intercept(undefined);
    await locks.close();
  });

  it("an interleaving held open with a gate: a second process asks while the first one's acquire has run but not answered", async () => {
    const redis = new MemoryRedis();
    const a = new Surelock({ redis });
    const b = new Surelock({ redis: redis.duplicate() });
    // Once, so the script is cached and the gated EVALSHA is the call that takes the lock (not a NOSCRIPT).
    await (await a.mutex("race").acquire()).release();
    const gate = new Gate();
    redis.intercept((call) => (call.name === "EVALSHA" ? { kind: "gate", gate, stage: "reply" } : undefined));
    const first = a.mutex("race").acquire();
    await gate.reached;
    // A's acquire ran in Redis; A does not know yet. B must be refused all the same.
    assert.equal(await b.mutex("race").tryAcquire(), null);
    redis.intercept(undefined);
    gate.open();
    const lease = await first;
    await lease.release();
    assert.ok(await b.mutex("race").tryAcquire());
    await Promise.all([a.close(), b.close()]);
  });
});
