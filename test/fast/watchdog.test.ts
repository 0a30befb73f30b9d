/**
 * The watchdog on a virtual clock: when it renews (ttl/3 after the confirming request was sent,
 * early by up to 2/9 ttl so that leases taken at different moments share a tick), how much it
 * sends (one keepalive call per node and tick, whatever the number of leases), when it stops
 * (release), and when a lease whose renewals get no answer is given up: at the end of its validity
 * (ttl − drift from the send instant of the last confirmed request), to the millisecond.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { LockLostError, type Lease } from "../../src/index.js";
import { Gate, type Fault } from "../../src/testing/index.js";
import { World, assertCode, items, watchLoss, type Sent } from "./support.js";

const TTL = 3_000;
/** Validity of a lease confirmed by a request sent at 0: ttl − (⌊ttl × 1 %⌋ + 2). */
const VALID_UNTIL = TTL - 32;

/** Each keepalive call as "instant: the locks it renews", in send order. */
const renewals = (calls: Sent[]): string[] =>
  calls.map((c) => `${c.at}: ${items(c).map((i) => i.key).sort().join(" ")}`);

describe("fast: the watchdog", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  it("renews every held lease each ttl/3 with one keepalive call per tick, however many leases and kinds are held", async () => {
    const p = w.proc();
    const leases: Lease[] = [
      ...await Promise.all([0, 1, 2, 3].map((i) => p.locks.mutex(`m${i}`).acquire())),
      await p.locks.semaphore("pool", { permits: 2 }).acquire(),
      await p.locks.readWriteLock("doc").read().acquire(),
    ];
    const ticks: number[] = [];
    await w.stepTo(10_000, async (now) => {
      assert.ok(leases.every((l) => l.held), `every lease held at ${now}`);
      const sent = p.wire.calls("keepalive", now);
      if (sent.length > 0) ticks.push(now);
      assert.ok(sent.length <= 1, `one keepalive call at ${now}`);
      for (const call of sent) assert.equal(items(call).length, 6, `all six leases renewed at ${now}`);
    });
    assert.deepEqual(ticks, [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000, 10_000]);
    assert.equal((await w.lock("m0")).pttl, TTL, "renewed to the full ttl at the last tick");
    await Promise.all(leases.map((l) => l.release()));
  });

  it("renews a lease that falls due within 2/9 ttl of another one's tick in that tick, and merges later groups at the next tick of either", async () => {
    const p = w.proc();
    const a = await p.locks.mutex("a").acquire();
    await w.to(600); // due at 1 600: 600 ms after a's first tick, within 2/9 × 3 000 = 666 ms
    const b = await p.locks.mutex("b").acquire();
    await w.to(700); // due at 1 700: 700 ms after it, outside the window
    const c = await p.locks.mutex("c").acquire();
    await w.to(4_000);
    assert.deepEqual(renewals(p.wire.calls("keepalive")), [
      "1000: surelock:{a}:lock surelock:{b}:lock",
      "1700: surelock:{a}:lock surelock:{b}:lock surelock:{c}:lock",
      "2700: surelock:{a}:lock surelock:{b}:lock surelock:{c}:lock",
      "3700: surelock:{a}:lock surelock:{b}:lock surelock:{c}:lock",
    ]);
    assert.ok(a.held && b.held && c.held);
    await Promise.all([a, b, c].map((l) => l.release()));
  });

  it("stops renewing a lease once it is released, and sends nothing while nothing is held", async () => {
    const p = w.proc();
    const a = await p.locks.mutex("a").acquire();
    const b = await p.locks.mutex("b").acquire();
    await w.to(1_500);
    await a.release();
    await w.to(3_500);
    await b.release();
    await w.to(20_000);
    assert.deepEqual(renewals(p.wire.calls("keepalive")), [
      "1000: surelock:{a}:lock surelock:{b}:lock",
      "2000: surelock:{b}:lock",
      "3000: surelock:{b}:lock",
    ]);
    assert.deepEqual(p.wire.sent.filter((s) => s.at > 3_500).map((s) => s.name), [], "nothing sent after the last release");
  });

  const silent: [string, (gate: Gate) => Fault][] = [
    ["its reply is held (the renewal ran in Redis)", (gate) => ({ kind: "gate", gate, stage: "reply" })],
    ["it never runs (held before execution)", (gate) => ({ kind: "gate", gate, stage: "execution" })],
    ["its reply is lost and never comes", () => ({ kind: "drop-reply", then: "hang" })],
  ];
  for (const [how, fault] of silent) {
    it(`reports a lease lost at the end of its validity, to the ms, when its renewal gets no answer because ${how}`, async () => {
      const p = w.proc();
      const lease = await p.locks.mutex("k").acquire();
      const gate = new Gate();
      p.wire.fault = (s) => (s.script === "keepalive" ? fault(gate) : undefined);
      const loss = watchLoss(w.clock, lease);
      await w.stepTo(VALID_UNTIL - 1, (now) => assert.ok(lease.held && loss.at === undefined, `held at ${now}`));
      await w.to(VALID_UNTIL);
      assert.equal(loss.at, VALID_UNTIL);
      assertCode(loss.reason, "ERR_SURELOCK_LOCK_LOST");
      assert.equal((loss.reason as LockLostError).reason, "unreachable");
      assert.equal(lease.held, false);
      assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [1_000], "one renewal, unanswered");
      // Its answer, if it ever comes, changes nothing.
      gate.open();
      await w.to(VALID_UNTIL + 100);
      assert.equal(lease.held, false);
      assert.equal(await lease.isHeld(), false);
      assert.equal(lease.signal.reason, loss.reason);
      await assert.rejects(lease.release(), LockLostError);
    });
  }

  it("reports a lease lost at the end of its validity when every renewal fails, retrying every ttl/10 until then", async () => {
    const p = w.proc();
    const lease = await p.locks.mutex("k").acquire();
    p.wire.fault = (s) => (s.script === "keepalive" ? { kind: "fail" } : undefined);
    const loss = watchLoss(w.clock, lease);
    await w.stepTo(VALID_UNTIL - 1, (now) => assert.ok(lease.held, `held at ${now}`));
    await w.to(10_000);
    assert.equal(loss.at, VALID_UNTIL);
    assert.equal((loss.reason as LockLostError).reason, "unreachable");
    assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [1_000, 1_300, 1_600, 1_900, 2_200, 2_500, 2_800]);
    await assert.rejects(lease.release(), LockLostError);
  });

  it("reports a lease lost at the tick whose renewal finds its hold gone from Redis", async () => {
    const p = w.proc();
    const lease = await p.locks.mutex("k").acquire();
    const loss = watchLoss(w.clock, lease);
    await w.to(1_500);
    await w.observer.command(["DEL", "surelock:{k}:lock"]);
    assert.equal(lease.held, true, "nothing tells it before the next renewal");
    await w.to(2_000);
    assert.equal(loss.at, 2_000);
    assert.equal((loss.reason as LockLostError).reason, "expired");
    const other = w.track(w.proc().locks.mutex("k").acquire({ timeout: 0 }));
    await w.clock.settle();
    assert.ok(other.ok, "another process takes it");
    assert.equal(lease.held, false);
    await (other.value as Lease).release();
  });
});
