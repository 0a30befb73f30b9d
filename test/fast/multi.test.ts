/**
 * multiLock on a virtual clock (MemoryRedis runs the same Lua): a set waits behind a mutex holder
 * without taking its free keys, is served at the holder's release instant, and holds back the
 * mutex waiter that queued behind it; the watchdog renews every key of the set in the same
 * keepalive call; a waiter that gives up leaves every queue.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { Lease } from "../../src/index.js";
import { World, assertCode, items } from "./support.js";

describe("fast: multiLock", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  it("is served at the release instant of the key it waited for, ahead of the mutex waiter that queued after it", async () => {
    const b = await w.proc().locks.mutex("b").acquire();
    await w.to(400);
    const set = w.track(w.proc().locks.multiLock(["a", "b"]).acquire());
    await w.clock.settle();
    const later = w.track(w.proc().locks.mutex("a").acquire());
    await w.clock.settle();
    assert.deepEqual((await w.lock("a")).fields, {}, "a stays free while the set waits for b");
    assert.equal((await w.queue("a")).length, 2, "the set's ticket, then the mutex waiter's");
    await w.to(900);
    assert.equal(later.settled, false, "the mutex waiter does not jump the set's ticket ahead of it");
    await b.release();
    await w.clock.settle();
    assert.equal(set.at, 900, "the set is served at b's release instant");
    const lease = set.value as Lease;
    assert.equal((await w.lock("a")).fields.h, (await w.lock("b")).fields.h, "one hold on both keys");
    assert.equal(later.settled, false);
    await w.to(1_000);
    await lease.release();
    await w.clock.settle();
    assert.equal(later.at, 1_000, "the mutex waiter is granted a at the set's release");
    await (later.value as Lease).release();
  });

  it("the watchdog renews every key of the set in one keepalive call per tick", async () => {
    const p = w.proc();
    const lease = await p.locks.multiLock(["r1", "r2", "r3"]).acquire();
    await w.stepTo(10_000, async (now) => {
      assert.equal(lease.held, true, `held at ${now}`);
      for (const call of p.wire.calls("keepalive", now)) assert.deepEqual(items(call).map((i) => i.kind), ["x", "x", "x"]);
    }, 50);
    assert.ok(p.wire.calls("keepalive").length >= 10);
    for (const key of ["r1", "r2", "r3"]) assert.ok((await w.lock(key)).pttl > 1_000, `${key} renewed`);
    await lease.release();
  });

  it("a timeout leaves every queue, and the free key goes to the mutex waiter that was behind the set", async () => {
    const b = await w.proc().locks.mutex("b").acquire();
    const set = w.track(w.proc().locks.multiLock(["a", "b"]).acquire({ timeout: 500 }));
    await w.clock.settle();
    const later = w.track(w.proc().locks.mutex("a").acquire());
    await w.clock.settle();
    await w.to(500);
    await w.clock.settle();
    assertCode(set.error, "ERR_SURELOCK_TIMEOUT");
    assert.equal(later.at, 500, "granted a the moment the set left");
    assert.deepEqual(await w.queue("b"), []);
    await Promise.all([b.release(), (later.value as Lease).release()]);
  });
});
