/**
 * multiLock on a virtual clock (MemoryRedis runs the same Lua): a set waiting for a held key takes
 * nothing and holds no other key back, and is served at the release of the last of its keys; a
 * flow that holds one of its keys gets another at once; the watchdog renews every key of the set
 * in the same keepalive call; a waiter that gives up leaves every queue.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { Lease } from "../../src/index.js";
import { World, assertCode, items } from "./support.js";

describe("fast: multiLock", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  it("waiting for a held key, it holds no other key back; it is served at the release of the last of its keys", async () => {
    const b = await w.proc().locks.mutex("b").acquire();
    await w.to(400);
    const set = w.track(w.proc().locks.multiLock(["a", "b"]).acquire());
    await w.clock.settle();
    const later = w.track(w.proc().locks.mutex("a").acquire());
    await w.clock.settle();
    assert.equal(later.at, 400, "a later mutex of the free key takes it at once: the set stands aside");
    await w.to(900);
    await b.release();
    await w.clock.settle();
    assert.equal(set.settled, false, "b is free, a is not: the set takes neither");
    assert.deepEqual((await w.lock("b")).fields.o, undefined);
    await w.to(1_000);
    await (later.value as Lease).release();
    await w.clock.settle();
    assert.equal(set.at, 1_000, "served at the release instant of a, the last of its keys to be freed");
    const lease = set.value as Lease;
    assert.equal((await w.lock("a")).fields.h, (await w.lock("b")).fields.h, "one hold on both keys");
    await lease.release();
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

  it("a flow that holds one of its keys gets another at once while the set waits, and a timeout leaves every queue", async () => {
    const holder = w.proc().locks;
    const b = await holder.mutex("b").acquire();
    const set = w.track(w.proc().locks.multiLock(["a", "b"]).acquire({ timeout: 500 }));
    await w.clock.settle();
    assert.deepEqual(await w.queue("a"), await w.queue("b"), "the set waits in both queues");
    // The holder of b now asks for a: the waiting set must not stand in its way (it would wait for b).
    const a = w.track(holder.mutex("a").acquire());
    await w.clock.settle();
    assert.equal(a.at, 0, "a is taken at once");
    await w.to(500);
    await w.clock.settle();
    assertCode(set.error, "ERR_SURELOCK_TIMEOUT");
    assert.deepEqual([await w.queue("a"), await w.queue("b")], [[], []], "the set left every queue");
    await Promise.all([(a.value as Lease).release(), b.release()]);
  });
});
