/**
 * The Lease: the handle of one acquisition (one entry of a possibly re-entered lock), and the
 * Hold it stands on: what Redis holds for one (key, owner, token), renewed by the watchdog and
 * shared by all re-entries of that acquisition.
 */
import { driftMs, now } from "./clock.js";
import { publish } from "./diagnostics.js";
import { LockLostError, LockNotHeldError, type LockLostReason } from "./errors.js";
import type { LockKeys } from "./keys.js";
import type { LeaseState, ReleaseReply } from "./scripts/index.js";
import { checkTtl } from "./validate.js";

/** How a hold is stored: a holder hash (mutex, write lock) or a member of a zset (permit, read lock). */
export type HoldKind = "h" | "z";

/** The lock-protocol operations a lease needs from its store (one node or a quorum). */
export interface LeaseStore {
  release(hold: Hold): Promise<ReleaseReply>;
  extend(hold: Hold, ttlMs: number): Promise<LeaseState>;
  check(hold: Hold): Promise<LeaseState>;
}

/** The part of the watchdog a lease talks to. */
export interface HoldTracker {
  track(hold: Hold): void;
  untrack(hold: Hold): void;
}

export class Hold {
  readonly keys: LockKeys;
  /** The Redis key renewed: the holder hash or the zset. */
  readonly renewKey: string;
  readonly kind: HoldKind;
  /** Owner (hash) or member (zset) in Redis. */
  readonly who: string;
  readonly token: bigint;
  ttlMs: number;
  /** Monotonic instant until which the lease is provably ours. */
  validUntilAt: number;
  /** Monotonic instant at which the watchdog should renew it. */
  renewDueAt: number;
  /** Set while a renewal is on the wire, and after one failed (for the loss reason). */
  renewInFlight = false;
  renewFailed = false;
  lost: LockLostError | undefined;
  readonly leases = new Set<Lease>();

  constructor(keys: LockKeys, renewKey: string, kind: HoldKind, who: string, token: bigint, ttlMs: number, sentAt: number) {
    this.keys = keys;
    this.renewKey = renewKey;
    this.kind = kind;
    this.who = who;
    this.token = token;
    this.ttlMs = ttlMs;
    this.validUntilAt = sentAt + ttlMs - driftMs(ttlMs);
    this.renewDueAt = sentAt + ttlMs / 3;
  }

  /** Records that Redis confirmed the lease as of `sentAt` (when the confirming call was sent). */
  confirmed(sentAt: number, ttlMs = this.ttlMs): void {
    if (this.lost) return;
    this.ttlMs = ttlMs;
    this.validUntilAt = sentAt + ttlMs - driftMs(ttlMs);
    this.renewDueAt = sentAt + ttlMs / 3;
    this.renewFailed = false;
  }

  /** Marks the hold lost and aborts the signal of every lease on it. Idempotent. */
  lose(reason: LockLostReason, detail: string, lateByMs = 0): LockLostError {
    if (this.lost) return this.lost;
    const error = new LockLostError(this.keys.key, reason, detail);
    this.lost = error;
    publish("lost", () => ({ key: this.keys.key, fencingToken: this.token, reason, lateByMs }));
    for (const lease of this.leases) lease._abort(error);
    return error;
  }

  /** Checks validity on the monotonic clock; loses the hold if it ran out. */
  checkValidity(at = now()): void {
    if (!this.lost && at >= this.validUntilAt) {
      const reason = this.renewInFlight || this.renewFailed ? "unreachable" : "expired";
      this.lose(reason, "its validity ran out before a renewal was confirmed", at - this.validUntilAt);
    }
  }
}

/**
 * The handle of a held lock: one acquisition. Release it exactly once (a second release is a
 * no-op); `await using` does that for you. `signal` aborts with a LockLostError the moment the
 * lease can no longer be trusted.
 */
export class Lease implements AsyncDisposable {
  /** The user's key, as given. */
  readonly key: string;
  /** Fencing token: strictly increasing for each new (non-reentrant) acquisition of the key. */
  readonly fencingToken: bigint;
  /** The owner this lease holds the lock as (shared by re-entries and by explicit `owner`). */
  readonly owner: string;
  readonly #hold: Hold;
  readonly #store: LeaseStore;
  readonly #tracker: HoldTracker;
  readonly #controller = new AbortController();
  readonly #acquiredAt = now();
  readonly #onEnd: (lease: Lease) => void;
  #released = false;
  #releasing: Promise<void> | undefined;

  /** @internal Created by the primitives. */
  constructor(hold: Hold, owner: string, store: LeaseStore, tracker: HoldTracker, onEnd: (lease: Lease) => void) {
    this.key = hold.keys.key;
    this.fencingToken = hold.token;
    this.owner = owner;
    this.#hold = hold;
    this.#store = store;
    this.#tracker = tracker;
    this.#onEnd = onEnd;
    hold.leases.add(this);
    if (hold.leases.size === 1) tracker.track(hold);
  }

  /** Aborts (with a LockLostError as reason) as soon as the lease can no longer be trusted. */
  get signal(): AbortSignal {
    if (!this.#released) this.#hold.checkValidity();
    return this.#controller.signal;
  }

  /** Local view: acquired, not released, not known to be lost, validity not run out. */
  get held(): boolean {
    if (this.#released) return false;
    this.#hold.checkValidity();
    return !this.#hold.lost;
  }

  /** @internal The hold this lease stands on. */
  get _hold(): Hold {
    return this.#hold;
  }

  /** @internal */
  _abort(error: LockLostError): void {
    if (!this.#released) this.#controller.abort(error);
  }

  /**
   * Renews the lease now, for `ttl` ms (default: its current ttl, which the watchdog then keeps
   * using). Throws LockLostError if it is no longer held, LockNotHeldError after release.
   */
  async extend(ttl?: number): Promise<void> {
    const ttlMs = ttl === undefined ? this.#hold.ttlMs : checkTtl("ttl", ttl);
    if (this.#released) throw new LockNotHeldError(this.key, "the lease was already released");
    this.#hold.checkValidity();
    if (this.#hold.lost) throw this.#hold.lost;
    const sentAt = now();
    const state = await this.#store.extend(this.#hold, ttlMs);
    if (state === "held") {
      this.#hold.confirmed(sentAt, ttlMs);
      publish("extend", () => ({ key: this.key, fencingToken: this.fencingToken, ttl: ttlMs, automatic: false }));
      return;
    }
    throw this.#hold.lose(state === "taken" ? "taken" : "expired", "found on extend");
  }

  /** Asks Redis whether this acquisition still holds the lock. A "no" also aborts `signal`. */
  async isHeld(): Promise<boolean> {
    if (this.#released || this.#hold.lost) return false;
    const state = await this.#store.check(this.#hold);
    if (state === "held") return this.held;
    this.#hold.lose(state === "taken" ? "taken" : "expired", "found on isHeld");
    return false;
  }

  /**
   * Gives this entry back. The lock is freed at its last entry. Idempotent: later calls do nothing.
   * Rejects with LockLostError when the lease had been lost (the critical section may not have
   * been exclusive); with ConnectionError (QuorumError in quorum mode) if Redis could not be
   * reached: the lease is not renewed any more and the lock expires after its ttl.
   */
  release(): Promise<void> {
    if (this.#released) return Promise.resolve();
    this.#releasing ??= this.#release().finally(() => {
      this.#releasing = undefined;
    });
    return this.#releasing;
  }

  async #release(): Promise<void> {
    const hold = this.#hold;
    // Stop renewing before the network call: a release must never race a renewal of itself.
    this.#detach();
    hold.checkValidity();
    if (hold.lost) {
      this.#finish();
      throw hold.lost;
    }
    let reply: ReleaseReply;
    try {
      reply = await this.#store.release(hold);
    } finally {
      // Even when Redis could not be reached the lease is over for us: it is no longer renewed
      // and its key expires after the ttl. Renewing a lock nobody uses would only delay others.
      this.#finish();
    }
    if (reply === "gone" || reply === "taken") {
      const error = hold.lose(reply === "taken" ? "taken" : "expired", "found on release");
      this.#controller.abort(error);
      throw error;
    }
    publish("release", () => ({ key: this.key, fencingToken: this.fencingToken, heldMs: now() - this.#acquiredAt }));
  }

  #detach(): void {
    this.#hold.leases.delete(this);
    if (this.#hold.leases.size === 0) this.#tracker.untrack(this.#hold);
  }

  #finish(): void {
    this.#released = true;
    this.#onEnd(this);
  }

  /** Releases the lease (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
