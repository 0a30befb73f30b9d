/**
 * surelock itself, driven through an adapter that runs every call on a real redis-server and on
 * MemoryRedis and requires them to agree (support/tee-adapter.ts): mutexes under contention,
 * re-entry, fair queues, semaphores, read-write locks, extend, fencing guard, close. The calls
 * are the real ones the stores make, so this keeps checking whatever scripts src/scripts holds.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Surelock } from "../../src/index.js";
import { startsWaiting } from "../helpers/fixtures.js";
import { Differential } from "./support/differential.js";
import { TeeAdapter } from "./support/tee-adapter.js";

describe("surelock over redis-server and MemoryRedis side by side", () => {
  let d: Differential;
  let tee: TeeAdapter;
  before(async () => {
    d = await Differential.start();
    tee = new TeeAdapter(d);
  });
  after(async () => {
    tee.close();
    await d.stop();
  });

  const surelock = (): Surelock => new Surelock({ redis: tee, ttl: 3_000, commandTimeout: 20_000, pollInterval: 200 });

  it("every call agrees: contended mutex, re-entry, fair queue, semaphore, read-write lock, extend, guard", async () => {
    const instances = [surelock(), surelock(), surelock()];
    const [a, b, c] = instances as [Surelock, Surelock, Surelock];
    let inside = 0;
    let most = 0;
    const section = async (): Promise<void> => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((resolve) => setImmediate(resolve));
      inside--;
    };
    // Three processes, two workers each, on one key: handoffs, queue tickets, wake-ups.
    await Promise.all(instances.flatMap((s) => [0, 1].map(async () => {
      for (let i = 0; i < 3; i++) await s.withLock("orders:1", section);
    })));
    assert.equal(most, 1);
    // Re-entry, extend, isHeld.
    await a.withLock("orders:2", async (outer) => {
      await a.withLock("orders:2", async (inner) => assert.equal(inner.fencingToken, outer.fencingToken));
      await outer.extend(5_000);
      assert.equal(await outer.isHeld(), true);
      assert.equal(await b.mutex("orders:2").tryAcquire(), null);
    });
    // A fair mutex with waiters from two processes.
    const fair = await a.mutex("orders:3", { fair: true }).acquire();
    const firstWaits = startsWaiting("orders:3", 20_000);
    const first = b.mutex("orders:3", { fair: true }).acquire();
    await firstWaits;
    const secondWaits = startsWaiting("orders:3", 20_000);
    const second = c.mutex("orders:3", { fair: true }).acquire();
    await secondWaits;
    const waiting = [first, second];
    await fair.release();
    for (const p of waiting) await (await p).release();
    // Semaphore and read-write lock.
    const sem = [a, b, c].map((s) => s.semaphore("pool", { permits: 2 }));
    const held = [await sem[0]!.acquire(), await sem[1]!.acquire()];
    assert.equal(await sem[2]!.tryAcquire(), null);
    for (const l of held) await l.release();
    // Counted permits, and a raised limit that serves a waiter.
    const counted = await sem[0]!.acquire({ permits: 2 });
    const bigWaits = startsWaiting("pool", 20_000);
    const big = sem[1]!.acquire({ permits: 2 });
    await bigWaits;
    await sem[0]!.setPermits(4);
    for (const l of [counted, await big]) await l.release();
    const readers = [await a.readWriteLock("doc").read().acquire(), await b.readWriteLock("doc").read().acquire()];
    assert.equal(await c.readWriteLock("doc").write().tryAcquire(), null);
    const writer = c.readWriteLock("doc").write().acquire();
    for (const r of readers) await r.release();
    await (await writer).release();
    // A fenced write.
    await a.withLock("stock", async (lease) => {
      const result = await a.guard("stock").write(lease.fencingToken, "SET", "{stock}:units", "17");
      assert.equal(result.written, true);
    });
    await Promise.all(instances.map((s) => s.close()));
    assert.deepEqual(tee.disagreements.map(String), []);
    assert.ok(d.steps > 50, `only ${d.steps} calls were compared`);
    console.log(`# surelock through the tee adapter: ${d.steps} calls compared`);
  });
});
