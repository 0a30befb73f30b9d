/**
 * Handoff on a virtual clock: a release founds the hold of the live head of the queue and
 * announces it, so waiters in other processes are served in arrival order with no time passing at
 * all; a lost announcement costs one poll interval (the ticket's refresh reports the grant); a
 * waiter that gave up is never served, and a grant that crossed its departure goes to the next.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { Lease } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World, assertCode, type Tracked } from "./support.js";

describe("fast: handoff", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  /** Fails unless exactly the one lease `holder` believes it holds `key`, and Redis agrees. */
  async function soleHolder(key: string, holder: Lease, others: Tracked<Lease>[]): Promise<void> {
    assert.equal(holder.held, true);
    for (const t of others) if (t.value && t.value !== holder) assert.equal(t.value.held, false, "one believed holder");
    assert.equal((await w.lock(key)).fields.o, holder.owner, "the believed holder is the owner in Redis");
  }

  it("hands the lock to waiters in other processes in their arrival order, each at its predecessor's release instant", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    await w.to(500);
    const waiters: Tracked<Lease>[] = [];
    for (let i = 0; i < 4; i++) {
      waiters.push(w.track(w.proc().locks.mutex("k").acquire()));
      await w.clock.settle();
    }
    assert.equal((await w.queue("k")).length, 4, "four tickets in line");
    let previous = holder;
    for (const [i, waiter] of waiters.entries()) {
      await previous.release();
      await w.clock.settle();
      assert.deepEqual(waiters.map((t) => t.settled), waiters.map((_, j) => j <= i), `waiter ${i} is served, and only it`);
      assert.equal(waiter.at, 500, "served at the release instant: no poll was needed");
      const lease = waiter.value as Lease;
      assert.ok(lease.fencingToken > previous.fencingToken);
      await soleHolder("k", lease, waiters);
      previous = lease;
    }
    assert.equal(w.now, 500);
    await previous.release();
  });

  it("recovers a lost wake-up at the waiter's next ticket refresh, one poll interval after it queued", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const p = w.proc({ pollInterval: 200 });
    const waiting = w.track(p.locks.mutex("k").acquire());
    await w.clock.settle();
    await w.to(50);
    p.redis.loseNextMessage();
    await holder.release();
    // The release granted it in Redis at once; only the announcement was lost.
    const granted = (await w.lock("k")).fields;
    await w.stepTo(199, () => assert.equal(waiting.settled, false));
    await w.to(200);
    assert.equal(waiting.at, 200);
    const lease = waiting.value as Lease;
    assert.equal(lease.fencingToken, BigInt((granted.t ?? granted.c) as string));
    assert.equal(lease.owner, granted.o);
    assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [200], "found by the refresh");
    await w.to(5_000);
    assert.equal(lease.held, true, "then renewed like any lease");
    await lease.release();
  });

  it("serves neither a waiter that timed out nor one that aborted; the next in line gets the lock at the release", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const controller = new AbortController();
    const timesOut = w.track(w.proc().locks.mutex("k").acquire({ timeout: 500 }));
    await w.clock.settle();
    const aborts = w.track(w.proc().locks.mutex("k").acquire({ signal: controller.signal }));
    await w.clock.settle();
    const stays = w.track(w.proc().locks.mutex("k").acquire());
    await w.clock.settle();
    const [t1, t2, t3] = await w.queue("k");
    await w.to(500);
    assert.equal(timesOut.at, 500);
    assertCode(timesOut.error, "ERR_SURELOCK_TIMEOUT");
    assert.deepEqual(await w.queue("k"), [t2, t3], "the ticket that timed out left the line");
    await w.to(600);
    const reason = new Error("not any more");
    controller.abort(reason);
    await w.clock.settle();
    assert.equal(aborts.at, 600);
    assert.equal(aborts.error, reason);
    assert.deepEqual(await w.queue("k"), [t3]);
    await w.to(700);
    await holder.release();
    await w.clock.settle();
    assert.equal(stays.at, 700);
    await soleHolder("k", stays.value as Lease, [timesOut, aborts]);
    assert.ok(t1 && !(await w.lock("k")).fields[`@${t1}`]);
    await (stays.value as Lease).release();
  });

  it("gives a grant that crossed a timed-out waiter's departure back, and hands it to the next waiter", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const first = w.proc();
    const gate = new Gate();
    first.wire.fault = (s) => (s.script === "leave-queue" ? { kind: "gate", gate, stage: "execution" } : undefined);
    const timesOut = w.track(first.locks.mutex("k").acquire({ timeout: 500 }));
    await w.clock.settle();
    const next = w.track(w.proc().locks.mutex("k").acquire());
    await w.clock.settle();
    const [ticket] = await w.queue("k");
    await w.to(500);
    assertCode(timesOut.error, "ERR_SURELOCK_TIMEOUT");
    // Its departure is held on the wire; the release grants it the lock in Redis meanwhile.
    await holder.release();
    await w.clock.settle();
    assert.equal((await w.lock("k")).fields.h, ticket, "granted to the waiter that left");
    assert.equal(next.settled, false);
    gate.open();
    await w.clock.settle();
    assert.equal(next.at, 500);
    await soleHolder("k", next.value as Lease, [timesOut]);
    await (next.value as Lease).release();
  });
});
