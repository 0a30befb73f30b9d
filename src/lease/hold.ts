/**
 * A Hold: this process's view of one hold in Redis (one acquisition), shared by the leases that
 * entered it here. It keeps the hold's validity under the ordering rule of docs/protocol.md: every
 * request that confirms the hold records when it was sent and the ttl it sent; a reply confirms
 * that ttl from that instant, only the newest request may lengthen validity, and an older reply
 * may only shorten it.
 */
import { driftMs, type Clock } from "../clock.js";
import { widelyWatched } from "../deadline.js";
import { publish } from "../diagnostics.js";
import { LockLostError, type LockLostReason } from "../errors.js";
import { ownerOf } from "../ids.js";
import type { HoldRef } from "../store/types.js";

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

// The hold's yes/no states, as bits of one field: holds can number 100,000, and each field counts.
const RENEWING = 1;
const RENEWED = 2;
const RENEW_IN_FLIGHT = 4;
const RENEW_FAILED = 8;
const RELEASE_IN_FLIGHT = 16;

export class Hold {
  readonly ref: HoldRef;
  /** The semaphore permits it takes (1 for other locks). */
  readonly permits: number;
  /** The ttl the watchdog renews with; `extend(ttl)` changes it. */
  ttlMs: number;
  /** Monotonic instant until which the hold is provably ours. */
  validUntilAt: number;
  /** When the watchdog should renew it next. */
  renewDueAt: number;
  /** extend() calls whose reply has not come: their loss, too, is "unreachable". */
  extendsInFlight = 0;
  #flags: number;
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
    this.ttlMs = init.ttlMs;
    this.#flags = init.renewing ? RENEWING : 0;
    this.#clock = init.clock;
    this.#sent = init.confirmed.seq;
    this.validUntilAt = bound(init.confirmed.sentAt, init.pttlMs);
    this.renewDueAt = init.confirmed.sentAt + init.pttlMs / 3;
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

  /** Renewed by the watchdog (false for a fixed `leaseTime`, which ends by itself). */
  get renewing(): boolean {
    return (this.#flags & RENEWING) !== 0;
  }

  /** The watchdog renews it now (set by the watchdog: from `track` until its release or loss). */
  get renewed(): boolean {
    return (this.#flags & RENEWED) !== 0;
  }

  set renewed(on: boolean) {
    this.#set(RENEWED, on);
  }

  /** A renewal is on the wire, or the last one failed: a loss then is "unreachable". */
  get renewInFlight(): boolean {
    return (this.#flags & RENEW_IN_FLIGHT) !== 0;
  }

  set renewInFlight(on: boolean) {
    this.#set(RENEW_IN_FLIGHT, on);
  }

  get renewFailed(): boolean {
    return (this.#flags & RENEW_FAILED) !== 0;
  }

  set renewFailed(on: boolean) {
    this.#set(RENEW_FAILED, on);
  }

  /** A release is on the wire: its validity running out meanwhile means Redis could not be reached. */
  get releaseInFlight(): boolean {
    return (this.#flags & RELEASE_IN_FLIGHT) !== 0;
  }

  set releaseInFlight(on: boolean) {
    this.#set(RELEASE_IN_FLIGHT, on);
  }

  #set(flag: number, on: boolean): void {
    this.#flags = on ? this.#flags | flag : this.#flags & ~flag;
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
  request(ttlMs: number): Confirmation {
    const c = { seq: ++this.#sent, sentAt: this.#clock.now(), ttlMs };
    this.validUntilAt = Math.min(this.validUntilAt, bound(c.sentAt, ttlMs));
    // The next renewal is due a third of a ttl after this request, not after the last confirmed
    // one: a renewal sent right behind an extend would be the newest request when the extend's
    // reply came, which could then only shorten the validity (and so on, extend after extend).
    this.renewDueAt = Math.max(this.renewDueAt, c.sentAt + ttlMs / 3);
    return c;
  }

  /**
   * Redis confirmed the hold in answer to `c`, with `pttlMs` left (the request's ttl when the
   * script set it). The newest request sets validity; an older one may only shorten it.
   */
  confirm(c: Confirmation, pttlMs = c.ttlMs): void {
    if (this.lost) return;
    const until = bound(c.sentAt, pttlMs);
    if (c.seq === this.#sent) {
      this.validUntilAt = until;
      this.renewDueAt = c.sentAt + pttlMs / 3;
      this.renewFailed = false;
    } else {
      this.validUntilAt = Math.min(this.validUntilAt, until);
    }
  }

  /** Marks the hold lost and tells every lease on it. Idempotent. */
  lose(reason: LockLostReason, detail: string, lateByMs = 0): LockLostError {
    const already = this.lost;
    if (already) return already;
    const error = new LockLostError(this.key, reason, detail);
    this.#lostError = error;
    this.#lostController?.abort(error);
    // A shutdown is not a loss: whoever counts losses from the channel must not count a deploy.
    if (reason !== "closed") publish("lost", () => ({ key: this.key, fencingToken: this.token, reason, lateByMs }));
    for (const lease of this.leases) lease._lost(error);
    return error;
  }

  /** Loses the hold if its validity ran out by `at`. */
  checkValidity(at = this.#clock.now()): void {
    if (this.lost || at < this.validUntilAt) return;
    const waiting = this.renewInFlight || this.renewFailed || this.releaseInFlight || this.extendsInFlight > 0;
    const reason = waiting ? "unreachable" : "expired";
    this.lose(reason, "its validity ran out before a renewal was confirmed", at - this.validUntilAt);
  }
}

/** Until when a hold confirmed by a request sent at `sentAt` with `pttlMs` left is provably ours. */
function bound(sentAt: number, pttlMs: number): number {
  return sentAt + pttlMs - driftMs(pttlMs);
}
