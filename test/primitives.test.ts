import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { assertEveryKeyExpires, eventually, Harness, quietFor, within } from "./helpers/fixtures.js";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";

describe("semaphore and read-write lock", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertEveryKeyExpires(server); await server.command("FLUSHALL"); });
  after(() => server.stop());

  it("a semaphore never lets more than `permits` holders in at once", async () => {
    const locks = h.locks();
    const sem = locks.semaphore("pdf", { permits: 3 });
    let inside = 0;
    let most = 0;
    await Promise.all(Array.from({ length: 12 }, () => sem.withLock(async () => {
      inside++;
      most = Math.max(most, inside);
      await quietFor(15);
      inside--;
    })));
    assert.equal(most, 3);
  });

  it("semaphore tryAcquire returns null when full, and a released permit is taken by a waiter", async () => {
    const locks = h.locks();
    const sem = locks.semaphore("one", { permits: 1 });
    const first = await sem.acquire();
    assert.equal(await sem.tryAcquire(), null);
    const waiter = sem.acquire({ timeout: 5_000 });
    await first.release();
    const second = await within(2_000, waiter);
    assert.ok(second.fencingToken > first.fencingToken);
    await second.release();
  });

  it("readers share, a writer excludes them, and a waiting writer holds new readers back", async () => {
    const locks = h.locks();
    const rw = locks.readWriteLock("doc");
    const r1 = await rw.read().acquire();
    const r2 = await rw.read().acquire();
    assert.equal(await rw.write().tryAcquire(), null);
    const writer = rw.write().acquire({ timeout: 5_000 });
    // The refused writer stands in the lock's queue: new readers wait behind it.
    await eventually(async () => (await server.command("LLEN", "surelock:rw:{doc}:queue")) === 1, 2_000, "the writer's ticket");
    assert.equal(await rw.read().tryAcquire(), null);
    await r1.release();
    await r2.release();
    const w = await within(3_000, writer);
    assert.equal(await rw.read().tryAcquire(), null);
    await w.release();
    const r3 = await rw.read().tryAcquire();
    assert.ok(r3);
    await r3.release();
  });

  it("the writer may read inside its own write section", async () => {
    const locks = h.locks();
    const rw = locks.readWriteLock("doc2");
    await rw.write().withLock(async () => {
      const inner = await within(2_000, rw.read().acquire());
      await inner.release();
    });
  });
});
