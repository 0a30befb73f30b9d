/**
 * The Hold's lifecycle, on its own (no server): held → releasing → released, lost from either
 * live phase. The watchdog and the leases only ask it to move; a move the lifecycle does not have
 * is refused, lost and released are final, and an answer that comes after the hold ended (a
 * renewal's, an extend's) changes nothing.
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { afterEach, beforeEach, describe, it } from "node:test";
import { trustedUntil } from "../../src/clock.js";
import { LockLostError } from "../../src/errors.js";
import { KeySpace } from "../../src/keys.js";
import { Hold, type HoldWatcher } from "../../src/lease/hold.js";
import { VirtualClock } from "../../src/testing/index.js";

const TTL = 3_000;

describe("fast: a Hold's lifecycle", () => {
  let clock: VirtualClock;
  let lost: unknown[];
  const onLost = (message: unknown): void => { lost.push(message); };
  beforeEach(() => {
    clock = new VirtualClock();
    lost = [];
    diagnostics.subscribe("surelock:lost", onLost);
  });
  afterEach(() => { diagnostics.unsubscribe("surelock:lost", onLost); });

  function hold(renewing = true): Hold {
    const ref = { target: new KeySpace("surelock").mutexTarget("k"), hold: "h1", token: 1n };
    return new Hold({ ref, owner: "o", ttlMs: TTL, renewing, permits: 1, clock, confirmed: Hold.first(clock.now(), TTL), pttlMs: TTL });
  }

  /** A lease on the hold that records what it was told. */
  function watcher(entry: string): HoldWatcher & { told: LockLostError[] } {
    const told: LockLostError[] = [];
    return { _entry: entry, told, _lost: (error) => { told.push(error); } };
  }

  it("starts held and trusted until sent + pttl − drift; a renewal answered 'held' moves validity to its own send instant", async () => {
    const h = hold();
    assert.equal(h.phase, "held");
    assert.equal(h.validUntilAt, trustedUntil(0, TTL));
    assert.equal(h.startRenewals(), true);
    assert.equal(h.startRenewals(), false, "taken on once");
    await clock.advance(1_000);
    const c = h.beginRenewal();
    assert.throws(() => h.beginRenewal(), /beginRenewal on a hold that is held/, "one renewal on the wire at a time");
    assert.equal(h.renewalAnswered(c, "held"), true);
    assert.equal(h.validUntilAt, trustedUntil(1_000, TTL));
    assert.equal(h.phase, "held");
  });

  it("refuses the moves its lifecycle does not have", () => {
    const fixed = hold(false);
    assert.equal(fixed.startRenewals(), false, "a fixed lease is never renewed by the watchdog");
    assert.throws(() => fixed.beginRenewal(), /internal error: beginRenewal/);
    assert.throws(() => fixed.callSettled(), /callSettled without a call/);
    assert.throws(() => fixed.released(), /released on a hold that is held/, "a held hold is not released without a release");

    const h = hold();
    h.beginRelease(true);
    assert.equal(h.phase, "releasing");
    assert.throws(() => h.beginRelease(true), /beginRelease on a hold that is releasing/);
    assert.throws(() => h.beginExtend(TTL), /beginExtend on a hold that is releasing/);
    h.callSettled();
    h.released();
    assert.equal(h.phase, "released");
    assert.throws(() => h.released(), /released on a hold that is released/);
    assert.throws(() => h.beginRelease(false), /beginRelease on a hold that is released/);
    assert.equal(h.startRenewals(), false, "the watchdog does not take on a released hold");
  });

  it("lost is final: told once, to every lease on it; nothing moves it afterwards", async () => {
    const h = hold();
    const a = watcher("a");
    const b = watcher("b");
    h.enter(a);
    h.enter(b);
    h.startRenewals();
    const c = h.beginRenewal();
    const error = h.lose("taken", "found by a test");
    assert.equal(h.phase, "lost");
    assert.equal(h.lost, error);
    assert.deepEqual([a.told, b.told], [[error], [error]]);
    assert.equal(h.lose("expired", "again"), error, "a second loss answers the first");
    assert.equal(lost.length, 1, "surelock:lost heard it once");
    assert.ok(h.lostSignal.aborted && h.lostSignal.reason === error);

    const until = h.validUntilAt;
    await clock.advance(1_000);
    assert.equal(h.renewalAnswered(c, "held"), false, "a renewal confirmed after the loss does nothing");
    h.confirm({ seq: 99, sentAt: clock.now(), ttlMs: TTL });
    assert.equal(h.validUntilAt, until, "nor does any confirmation");
    h.trustUntil(clock.now() + TTL);
    assert.equal(h.validUntilAt, until, "nor a store's word");
    assert.throws(() => h.beginRelease(true), /beginRelease on a hold that is lost/);
    assert.throws(() => h.beginExtend(TTL), /beginExtend on a hold that is lost/);
    h.released();
    assert.equal(h.phase, "lost", "the end of its release leaves it lost");
    assert.equal(a.told.length + b.told.length, 2);
  });

  it("a renewal answer that comes after the release began or ended does nothing", async () => {
    const h = hold();
    h.startRenewals();
    await clock.advance(500);
    const c = h.beginRenewal();
    // The last lease leaves: the watchdog lets the hold go, its release goes on the wire.
    h.stopRenewals();
    h.beginRelease(true);
    assert.equal(h.renewalAnswered(c, "taken"), false);
    assert.equal(h.phase, "releasing", "a 'taken' that answered the renewal is not a loss of the release");
    h.callSettled();
    h.released();
    assert.equal(h.renewalAnswered(c, "held"), false);
    assert.equal(h.phase, "released");
    const error = h.lose("expired", "found after release");
    assert.ok(error instanceof LockLostError, "the caller still gets an error to throw");
    assert.equal(h.lost, undefined, "a released hold is not lost afterwards");
    assert.equal(h.phase, "released");
    assert.equal(lost.length, 0, "nor is a loss published");
  });

  it("validity running out loses a live hold: 'unreachable' while a call is on the wire, 'expired' when none is", () => {
    const quiet = hold(false);
    quiet.checkValidity(TTL - 100);
    assert.equal(quiet.phase, "held", "still trusted before sent + ttl − drift");
    quiet.checkValidity(TTL);
    assert.equal(quiet.lost?.reason, "expired");

    const releasing = hold(false);
    releasing.beginRelease(true);
    releasing.checkValidity(TTL);
    assert.equal(releasing.lost?.reason, "unreachable", "a release on the wire when validity ran out");
    releasing.callSettled();
    releasing.released();
    assert.equal(releasing.phase, "lost");

    const extending = hold(false);
    extending.beginExtend(TTL);
    assert.equal(extending.ttlMs, TTL);
    extending.checkValidity(TTL);
    assert.equal(extending.lost?.reason, "unreachable", "an extend on the wire when validity ran out");

    const released = hold(false);
    released.beginRelease(true);
    released.callSettled();
    released.released();
    released.checkValidity(10 * TTL);
    assert.equal(released.lost, undefined, "a released hold's validity no longer counts");
  });

  it("two releases of entries on the wire at once: the hold stays 'unreachable' until both settled", () => {
    const h = hold(false);
    h.beginRelease(false);
    h.beginRelease(false);
    h.callSettled();
    h.checkValidity(TTL);
    assert.equal(h.lost?.reason, "unreachable");
  });
});
