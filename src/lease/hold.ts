/**
 * A Hold: this process's view of one hold in Redis (one acquisition), shared by the leases that
 * entered it here. It keeps the hold's validity under the ordering rule of docs/protocol.md: every
 * request that confirms the hold records when it was sent and the ttl it sent; a reply confirms
 * that ttl from that instant, only the newest request may lengthen validity, and an older reply
 * may only shorten it. Its life is one state machine (`HoldPhase`), moved only by its own methods,
 * each of which checks the move is legal: the watchdog and the leases ask, they never set.
 */
import { trustedUntil, type Clock } from "../clock.js";
import { widelyWatched } from "../deadline.js";
import { publish } from "../diagnostics.js";
import { LockLostError, type LockLostReason } from "../errors.js";
import { ownerOf } from "../ids.js";
import type { HoldRef, HoldState } from "../store/types.js";

/** A request that may confirm the hold: what it sent, and when. */
export interface Confirmation {
  readonly seq: number;
  readonly sentAt: number;
  readonly ttlMs: number;
}

/** A lease of this process on the hold: one entry, whose signal ends with the hold. */
export interface HoldWatcher {
  readonly _entry: string;
  _lost(error: LockLostError): void;
}

const NO_LEASES: readonly HoldWatcher[] = [];

/**
 * Where a hold is in its life. `held` → `releasing` (the last lease of this process gave its entry
 * back, the call is on the wire) → `released`; `lost` from either live phase. `released` and `lost`
 * are final.
 */
export type HoldPhase = "held" | "releasing" | "released" | "lost";

// The hold's state, packed into one field: holds can number 100,000, and each field counts.
// Bits 0-1: the phase.
const HELD = 0;
const RELEASING = 1;
const RELEASED = 2;
const LOST = 3;
const PHASE = 3;
const PHASES: readonly HoldPhase[] = ["held", "releasing", "released", "lost"];
// Bits 2-5: the renewal's bookkeeping.
/** Renewed by the watchdog (not a fixed `leaseTime`): set once, at creation. */
const RENEWING = 4;
/** The watchdog renews it now: from `startRenewals` until `stopRenewals`. */
const RENEWED = 8;
/** A renewal of the watchdog is on the wire. */
const RENEW_IN_FLIGHT = 16;
/** The watchdog's last renewal could not be made (until a newest request is confirmed). */
const RENEW_FAILED = 32;
// Bits 6 and up: how many calls of its leases (extends, releases of an entry) are on the wire.
const CALL = 64;

/** An internal error: a caller asked for a move the hold's lifecycle does not have. */
function illegal(move: string, phase: HoldPhase): Error {
  return new Error(`surelock internal error: ${move} on a hold that is ${phase}`);
}

export class Hold {
  readonly ref: HoldRef;
  /** The semaphore permits it takes (1 for other locks). */
  readonly permits: number;
  #ttlMs: number;
  #validUntilAt: number;
  #renewDueAt: number;
  /** Phase, renewal bookkeeping and calls in flight (see the constants above). */
  #state: number;
  /** The owner, when it is not the hold's default one (`ownerOf`, made again when read). */
  readonly #owner: string | undefined;
  /**
   * Leases of this process on this hold: the one lease itself (most holds only ever have one), or
   * an array replaced on each change (a Set would cost a hash table per hold, and holds can
   * number 100,000).
   */
  #leases: HoldWatcher | readonly HoldWatcher[] = NO_LEASES;
  readonly #clock: Clock;
  #lostError: LockLostError | undefined;
  /** Made on first use: most holds end without anyone racing their loss. */
  #lostController: AbortController | undefined;
  #sent = 0;

  constructor(init: {
    ref: HoldRef; owner: string; ttlMs: number; renewing: boolean; permits: number; clock: Clock; confirmed: Confirmation; pttlMs: number;
  }) {
    this.ref = init.ref;
    this.permits = init.permits;
    this.#owner = init.owner === ownerOf(init.ref.hold) ? undefined : init.owner;
    this.#ttlMs = init.ttlMs;
    this.#state = HELD | (init.renewing ? RENEWING : 0);
    this.#clock = init.clock;
    this.#sent = init.confirmed.seq;
    this.#validUntilAt = trustedUntil(init.confirmed.sentAt, init.pttlMs);
    this.#renewDueAt = init.confirmed.sentAt + init.pttlMs / 3;
  }

  /** The first request of a hold (its acquisition, or the refresh before its grant). */
  static first(sentAt: number, ttlMs: number): Confirmation {
    return { seq: 0, sentAt, ttlMs };
  }

  get token(): bigint {
    return this.ref.token;
  }

  /** The user's key. */
  get key(): string {
    return this.ref.target.keys.key;
  }

  get owner(): string {
    return this.#owner ?? ownerOf(this.ref.hold);
  }

  get phase(): HoldPhase {
    return PHASES[this.#state & PHASE] as HoldPhase;
  }

  /** Held or being released: its validity still counts, and it can still be lost. */
  get #live(): boolean {
    return (this.#state & PHASE) <= RELEASING;
  }

  /** The ttl the watchdog renews with; `beginExtend(ttl)` changes it. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Monotonic instant until which the hold is provably ours. */
  get validUntilAt(): number {
    return this.#validUntilAt;
  }

  /** When the watchdog should renew it next. */
  get renewDueAt(): number {
    return this.#renewDueAt;
  }

  /** Renewed by the watchdog (false for a fixed `leaseTime`, which ends by itself). */
  get renewing(): boolean {
    return (this.#state & RENEWING) !== 0;
  }

  /** The watchdog renews it now. */
  get renewed(): boolean {
    return (this.#state & RENEWED) !== 0;
  }

  /** The watchdog takes it on; whether it did (a held hold that renews and was not taken on yet). */
  startRenewals(): boolean {
    if ((this.#state & (PHASE | RENEWING | RENEWED)) !== (HELD | RENEWING)) return false;
    this.#state |= RENEWED;
    return true;
  }

  /** The watchdog lets it go; whether it had it. */
  stopRenewals(): boolean {
    if (!this.renewed) return false;
    this.#state &= ~RENEWED;
    return true;
  }

  /** The watchdog sends a renewal, for the hold's ttl: only of a held hold it renews, one at a time. */
  beginRenewal(): Confirmation {
    if ((this.#state & (PHASE | RENEWED | RENEW_IN_FLIGHT)) !== (HELD | RENEWED)) throw illegal("beginRenewal", this.phase);
    this.#state |= RENEW_IN_FLIGHT;
    return this.#request(this.#ttlMs);
  }

  /**
   * The watchdog's renewal `c` was answered: Redis found the hold `state`. Whether it confirmed the
   * hold; an answer that comes after the hold was released or lost (or the watchdog let it go)
   * does nothing.
   */
  renewalAnswered(c: Confirmation, state: HoldState): boolean {
    this.#state &= ~RENEW_IN_FLIGHT;
    if ((this.#state & (PHASE | RENEWED)) !== (HELD | RENEWED)) return false;
    if (state !== "held") {
      this.lose(state === "taken" ? "taken" : "expired", "found by the watchdog's renewal");
      return false;
    }
    this.confirm(c);
    this.checkValidity();
    return true;
  }

  /** The watchdog's renewal could not be made: it is due again shortly after `retryAt`; a loss meanwhile is "unreachable". */
  renewalFailed(retryAt: number): void {
    this.#state = (this.#state & ~RENEW_IN_FLIGHT) | RENEW_FAILED;
    this.#renewDueAt = retryAt + Math.max(this.#ttlMs / 10, 5);
  }

  /** A lease extends the held hold to `ttlMs`, which the watchdog then renews with. Settle it with `callSettled`. */
  beginExtend(ttlMs: number): Confirmation {
    if ((this.#state & PHASE) !== HELD) throw illegal("beginExtend", this.phase);
    this.#ttlMs = ttlMs;
    this.#state += CALL;
    return this.#request(ttlMs);
  }

  /**
   * A lease gives its entry back: the hold must be held; with the last lease of this process it
   * is `releasing` from now on. Settle it with `callSettled`, then `released()` after the last.
   */
  beginRelease(last: boolean): void {
    if ((this.#state & PHASE) !== HELD) throw illegal("beginRelease", this.phase);
    this.#state += CALL + (last ? RELEASING : 0);
  }

  /** An extend or a release begun here got its answer (or gave up waiting). */
  callSettled(): void {
    if (this.#state < CALL) throw illegal("callSettled without a call", this.phase);
    this.#state -= CALL;
  }

  /** The release of the last entry settled, whatever it found: the hold ended here (a lost one stays lost). */
  released(): void {
    const phase = this.#state & PHASE;
    if (phase === RELEASING) this.#state += RELEASED - RELEASING;
    else if (phase !== LOST) throw illegal("released", this.phase);
  }

  /** The store vouches for the hold until `at` (a store that renews its holds itself): its validity, while live. */
  trustUntil(at: number): void {
    if (this.#live) this.#validUntilAt = at;
  }

  /** This process's leases on the hold. */
  get leases(): readonly HoldWatcher[] {
    const leases = this.#leases;
    return Array.isArray(leases) ? leases as readonly HoldWatcher[] : [leases as HoldWatcher];
  }

  enter(lease: HoldWatcher): void {
    const leases = this.#leases;
    if (leases === NO_LEASES) this.#leases = lease;
    // concat allocates exactly what it holds; a spread reserves room to grow.
    else this.#leases = Array.isArray(leases) ? (leases as readonly HoldWatcher[]).concat(lease) : [leases as HoldWatcher, lease];
  }

  /** Takes `lease` off the hold; whether it was the last one. */
  leave(lease: HoldWatcher): boolean {
    const leases = this.#leases;
    if (!Array.isArray(leases)) {
      if (leases === lease) this.#leases = NO_LEASES;
    } else {
      const left = (leases as readonly HoldWatcher[]).filter((l) => l !== lease);
      this.#leases = left.length === 1 ? left[0] as HoldWatcher : left.length === 0 ? NO_LEASES : left;
    }
    return this.#leases === NO_LEASES;
  }

  /** The reason the hold was lost, once it was. */
  get lost(): LockLostError | undefined {
    return this.#lostError;
  }

  /** Aborts when the hold is lost (for races that must end then). */
  get lostSignal(): AbortSignal {
    if (!this.#lostController) {
      this.#lostController = widelyWatched();
      if (this.#lostError) this.#lostController.abort(this.#lostError);
    }
    return this.#lostController.signal;
  }

  /**
   * A request that may confirm the hold is about to be sent, for `ttlMs`. Once sent, Redis may
   * apply it at any moment, so a shorter ttl bounds validity right away: the hold lasts at least
   * `ttlMs` from whenever it runs, which is after now.
   */
  #request(ttlMs: number): Confirmation {
    const c = { seq: ++this.#sent, sentAt: this.#clock.now(), ttlMs };
    this.#validUntilAt = Math.min(this.#validUntilAt, trustedUntil(c.sentAt, ttlMs));
    // The next renewal is due a third of a ttl after this request, not after the last confirmed
    // one: a renewal sent right behind an extend would be the newest request when the extend's
    // reply came, which could then only shorten the validity (and so on, extend after extend).
    this.#renewDueAt = Math.max(this.#renewDueAt, c.sentAt + ttlMs / 3);
    return c;
  }

  /**
   * Redis confirmed the hold in answer to `c`, with `pttlMs` left (the request's ttl when the
   * script set it). The newest request sets validity; an older one may only shorten it. Nothing
   * once the hold ended (released or lost).
   */
  confirm(c: Confirmation, pttlMs = c.ttlMs): void {
    if (!this.#live) return;
    const until = trustedUntil(c.sentAt, pttlMs);
    if (c.seq === this.#sent) {
      this.#validUntilAt = until;
      this.#renewDueAt = c.sentAt + pttlMs / 3;
      this.#state &= ~RENEW_FAILED;
    } else {
      this.#validUntilAt = Math.min(this.#validUntilAt, until);
    }
  }

  /**
   * Marks the live hold lost and tells every lease on it; returns why. Lost is final: a second
   * call answers the first loss. A hold released here is not lost any more: the error is
   * returned for the caller to throw, and nobody else is told.
   */
  lose(reason: LockLostReason, detail: string, lateByMs = 0): LockLostError {
    const already = this.#lostError;
    if (already) return already;
    const error = new LockLostError(this.key, reason, detail);
    if (!this.#live) return error;
    this.#lostError = error;
    this.#state = (this.#state & ~PHASE) | LOST;
    this.#lostController?.abort(error);
    // A shutdown is not a loss: whoever counts losses from the channel must not count a deploy.
    if (reason !== "closed") publish("lost", () => ({ key: this.key, fencingToken: this.token, reason, lateByMs }));
    for (const lease of this.leases) lease._lost(error);
    return error;
  }

  /** Loses the live hold if its validity ran out by `at`. */
  checkValidity(at = this.#clock.now()): void {
    if (!this.#live || at < this.#validUntilAt) return;
    // A call on the wire, or a renewal that failed: Redis may have it still, but could not say so.
    const waiting = (this.#state & (RENEW_IN_FLIGHT | RENEW_FAILED)) !== 0 || this.#state >= CALL;
    const reason = waiting ? "unreachable" : "expired";
    this.lose(reason, "its validity ran out before a renewal was confirmed", at - this.#validUntilAt);
  }
}
