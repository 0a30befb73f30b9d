/**
 * Expiry on a virtual clock: a hold whose renewals do not get through lives in Redis exactly its
 * ttl from the acquire (present at that instant, gone one ms later, as in Redis); its holder gives
 * it up before (validity = ttl − drift), and nobody else gets the lock before Redis let it go. At
 * every millisecond around the expiry, at most one process believes it holds the lock, and a
 * process that believes it holds it is the owner Redis shows. An acquire answered when its hold's
 * validity has run out already (a slow reply) gives that hold back and asks again.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { Lease, LockLostError } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World, watchLoss, type Tracked } from "./support.js";

describe("fast: expiry", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  /** Fails unless every process that believes it holds `key` is the owner Redis shows, and at most one does. */
  async function oneBelievedHolder(key: string, leases: (Lease | undefined)[]): Promise<void> {
    const believers = leases.filter((l): l is Lease => l?.held === true);
    assert.ok(believers.length <= 1, `${believers.length} processes believe they hold ${key} at ${w.now}`);
    const owner = (await w.lock(key)).fields.o;
    for (const lease of believers) assert.equal(owner, lease.owner, `the believed holder is the owner in Redis at ${w.now}`);
  }

  it("with its renewals failing, a hold stays in Redis until its ttl and its waiter gets it at its first refresh after that", async () => {
    const a = w.proc();
    const b = w.proc({ pollInterval: 400 });
    const held = await a.locks.mutex("k").acquire();
    a.wire.fault = (s) => (s.script === "keepalive" ? { kind: "fail" } : undefined);
    const loss = watchLoss(w.clock, held);
    await w.to(10);
    const waiting = w.track(b.locks.mutex("k").acquire());
    const invariant = async (now: number): Promise<void> => {
      const there = (await w.lock("k")).fields.o !== undefined;
      assert.equal(there, now <= 3_000 || waiting.settled, `held in Redis at ${now}`);
      await oneBelievedHolder("k", [held, waiting.value]);
    };
    await w.stepTo(2_900, invariant, 10);
    await w.stepTo(3_300, invariant);
    assert.equal(loss.at, 3_000 - 32, "given up by its holder at the end of its validity");
    assert.equal((loss.reason as LockLostError).reason, "unreachable");
    // Queued at 10, its ticket is refreshed every 400 ms: the refresh at 3 210 finds the lock free.
    assert.equal(waiting.at, 3_210);
    const next = waiting.value as Lease;
    assert.ok(next.fencingToken > held.fencingToken);
    assert.equal(next.held, true);
    await next.release();
  });

  it("refuses every other process up to the instant the key expires in Redis, and lets the first one in a ms later", async () => {
    const a = w.proc();
    const c = w.proc();
    const held = await a.locks.mutex("k").acquire();
    const gate = new Gate();
    a.wire.fault = (s) => (s.script === "keepalive" ? { kind: "gate", gate, stage: "execution" } : undefined);
    await w.to(2_990);
    const tries: [number, boolean][] = [];
    let got: Lease | null = null;
    while (!got) {
      got = await c.locks.mutex("k").tryAcquire();
      tries.push([w.now, got !== null]);
      await oneBelievedHolder("k", [held, got ?? undefined]);
      if (!got) await w.to(w.now + 1);
    }
    assert.deepEqual(tries.at(-2), [3_000, false]);
    assert.deepEqual(tries.at(-1), [3_001, true]);
    assert.equal(held.held, false);
    gate.open();
    await got.release();
  });

  for (const answeredAt of [3_000 - 33, 3_000 - 32]) {
    const kept = answeredAt < 3_000 - 32;
    const when = kept ? "1 ms before its validity (ttl − drift from the send) ends" : "the instant its validity ends";
    it(`${kept ? "keeps" : "gives back, then acquires again,"} a hold whose acquire is answered ${when}`, async () => {
      const p = w.proc();
      const gate = new Gate();
      p.wire.fault = (s) => (s.script === "acquire" ? { kind: "gate", gate, stage: "reply" } : undefined);
      const pending = w.track(p.locks.mutex("k").acquire());
      await gate.reached;
      // The hold's token: its `t`, or the counter when it has none (an uncontended hold).
      const founded = (await w.lock("k")).fields.t ?? (await w.lock("k")).fields.c;
      await w.to(answeredAt);
      p.wire.fault = undefined;
      gate.open();
      await w.clock.settle();
      const lease = pending.value as Lease;
      assert.equal(pending.at, answeredAt);
      assert.equal(lease.held, true);
      assert.equal(lease.fencingToken > BigInt(founded as string), !kept, kept ? "the hold it founded" : "a new hold");
      await w.clock.advance(0); // timers due now fire
      assert.deepEqual(p.wire.sent.filter((s) => s.script).map((s) => `${s.at} ${s.script}`),
        kept ? ["0 acquire", `${answeredAt} keepalive`] : ["0 acquire", `${answeredAt} leave-queue`, `${answeredAt} acquire`],
        kept ? "renewed at once" : "given back first");
      await w.to(answeredAt + 5_000);
      assert.equal(lease.held, true);
      await lease.release();
    });
  }

  it("never renews a lease of fixed length (leaseTime): its signal aborts as expired before the key goes", async () => {
    const p = w.proc();
    const lease = await p.locks.mutex("k").acquire({ leaseTime: 1_000 });
    const loss = watchLoss(w.clock, lease);
    await w.stepTo(1_100, async (now) => {
      const pttl = (await w.lock("k")).pttl; // -2: no such key
      assert.equal(pttl >= 0, now <= 1_000, `the key is there at ${now}`);
      if (lease.held) assert.ok(pttl > 0, `believed held at ${now} with ${pttl} ms left in Redis`);
    });
    assert.equal(loss.at, 1_000 - 12);
    assert.equal((loss.reason as LockLostError).reason, "expired");
    assert.deepEqual(p.wire.calls("keepalive"), []);
    const taken: Tracked<Lease | null> = w.track(w.proc().locks.mutex("k").tryAcquire());
    await w.clock.settle();
    assert.ok(taken.value, "free for others");
    await taken.value.release();
  });
});
