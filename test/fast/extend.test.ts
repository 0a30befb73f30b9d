/**
 * extend() racing the watchdog's renewal, on a virtual clock, under the ordering rule of
 * docs/protocol.md: a reply confirms its request's ttl from its request's send instant; only the
 * newest request sent may lengthen validity, an older one's reply may only shorten it; a request
 * that shortens the lease lowers validity when it is sent. Replies are held at a gate to order
 * them; later renewals are held for good so that the instant the signal aborts shows the validity
 * the confirmed requests left. At every step a lease that believes it holds the lock is the owner
 * Redis shows, with time left.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { LockLostError, type Lease } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World, watchLoss, type Proc } from "./support.js";

/** ttl − drift for a ttl: what a request confirms from its send instant. */
const confirms = (ttlMs: number): number => ttlMs - (Math.floor(ttlMs * 0.01) + 2);

describe("fast: extend racing the watchdog", () => {
  let w: World;
  let p: Proc;
  let lease: Lease;
  /** Holds every keepalive call (renewals and extends) sent from the moment it is set. */
  let held: Gate;
  /** Holds renewals sent after the race, for good, so that validity is what the race left. */
  let never: Gate;
  beforeEach(async () => {
    w = await World.create();
    p = w.proc();
    lease = await p.locks.mutex("k").acquire();
    held = new Gate();
    never = new Gate();
  });
  afterEach(async () => {
    held.open();
    never.open();
    await w.close();
  });

  /** From now on keepalive calls wait at `gate`, before they run or (reply) after. */
  function hold(gate: Gate, stage: "execution" | "reply"): void {
    p.wire.fault = (s) => (s.script === "keepalive" ? { kind: "gate", gate, stage } : undefined);
  }

  /** Moves to `at` by `stepMs`, failing at any instant the lease believes it holds a lock Redis gave up. */
  async function safeUntil(at: number, stepMs = 1): Promise<void> {
    await w.stepTo(at, async (now) => {
      if (!lease.held) return;
      const { fields, pttl } = await w.lock("k");
      assert.ok(fields.o === lease.owner && pttl > 0, `believed held at ${now}; Redis: owner ${fields.o}, ${pttl} ms left`);
    }, stepMs);
  }

  it("lowers validity when a shortening extend is sent, before any reply", async () => {
    const loss = watchLoss(w.clock, lease);
    await w.to(100);
    hold(held, "reply");
    const extending = w.track(lease.extend(1_000));
    await held.reached;
    await safeUntil(1_050, 10);
    await safeUntil(1_200);
    assert.equal(loss.at, 100 + confirms(1_000), "validity counted from the unanswered extend's send instant");
    assert.equal(extending.at, loss.at, "the extend settles at the loss");
    assert.ok(extending.error instanceof LockLostError);
  });

  /** Keepalive calls wait at `held` (at `stage`); the extend's reply, the second call, is lost if `extendLost`. */
  function holdThenLose(stage: "execution" | "reply", extendLost: boolean): void {
    let n = 0;
    p.wire.fault = (s) => {
      if (s.script !== "keepalive") return undefined;
      return ++n === 2 && extendLost ? { kind: "drop-reply", then: "reset" } : { kind: "gate", gate: held, stage };
    };
  }

  for (const extendLost of [false, true]) {
    const its = extendLost ? "is lost" : "comes";
    it(`never lets a renewal answered after a shortening extend lengthen validity past the extend's (the extend's reply ${its})`, async () => {
      holdThenLose("reply", extendLost);
      await w.to(1_000);
      assert.equal(held.arrivals.length, 1, "the watchdog's renewal (ttl 3 000) ran in Redis; its reply is held");
      await w.to(1_200);
      const extending = w.track(lease.extend(1_000));
      await w.to(1_300);
      hold(never, "execution");
      held.open();
      await w.clock.settle();
      assert.equal(extending.ok, !extendLost, "the extend settles after the older renewal");
      const loss = watchLoss(w.clock, lease);
      await safeUntil(2_150, 10);
      await safeUntil(2_300);
      assert.equal(loss.at, 1_200 + confirms(1_000), "validity from the extend, not from the older renewal's 1 000 + 2 968");
    });

    it(`lengthens validity by a longer extend queued behind a renewal only when the extend's own reply confirms it (it ${its})`, async () => {
      holdThenLose("execution", extendLost);
      await w.to(1_100);
      const extending = w.track(lease.extend(6_000));
      await w.to(1_200);
      assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [1_000, 1_100], "renewal and extend both wait on the wire");
      hold(never, "execution");
      held.open();
      await w.clock.settle();
      assert.equal(extending.ok, !extendLost);
      const loss = watchLoss(w.clock, lease);
      const until = extendLost ? confirms(3_000) : 1_100 + confirms(6_000);
      await safeUntil(until - 50, 50);
      await safeUntil(until + 100);
      // Lost: the renewal's reply is older than the extend, so it may only shorten; the acquire's validity stands.
      assert.equal(loss.at, until);
    });
  }

  it("an extend on the wire postpones the watchdog's renewal, so its own reply is the newest and sets validity", async () => {
    hold(held, "reply");
    await w.to(900);
    const extending = w.track(lease.extend(1_000));
    await w.to(1_100);
    assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [900], "no renewal at the 1000 tick, right behind the extend");
    hold(never, "execution");
    held.open();
    await w.clock.settle();
    assert.ok(extending.ok);
    const loss = watchLoss(w.clock, lease);
    await safeUntil(1_800, 10);
    await safeUntil(2_000);
    // The next renewal went out a third of the extend's ttl after it (and is held for good).
    assert.deepEqual(p.wire.calls("keepalive").map((c) => c.at), [900, 900 + 1_000 / 3]);
    assert.equal(loss.at, 900 + confirms(1_000), "validity from the extend, the newest request");
  });
});
