/** A counting semaphore: up to `permits` permits held at once, taken one or several at a time. */
import type { Lease } from "../lease/lease.js";
import type { Engine } from "../engine.js";
import type { SharedTarget } from "../store/types.js";
import { checkPositiveInt, MAX_PERMITS } from "../validate.js";
import { Lock, type AcquireOptions, type LockedWork, type TryAcquireOptions } from "./lock.js";

/** Options of `Surelock.semaphore()`. */
export interface SemaphoreOptions {
  /** How many permits the semaphore has (required), 1 … 1 000 000; stored with it in Redis. */
  readonly permits: number;
  /** Lease length in ms (default: the Surelock's `ttl`). */
  readonly ttl?: number;
}

/** Options of `Semaphore.acquire()` and `withLock()`: those of every lock, and how many permits. */
export interface SemaphoreAcquireOptions extends AcquireOptions {
  /** How many permits to take at once, 1 … the semaphore's `permits` (default 1). */
  readonly permits?: number;
}

/** Options of `Semaphore.tryAcquire()`. */
export interface SemaphoreTryAcquireOptions extends TryAcquireOptions {
  /** How many permits to take at once (see SemaphoreAcquireOptions.permits). */
  readonly permits?: number;
}

const INTERNAL = Symbol("surelock.semaphore");

/**
 * A semaphore of `permits` permits. An acquisition takes one permit, or `permits: n` at once (all
 * or none; waiters are served in arrival order, so a large request is not overtaken by smaller
 * ones), and its lease gives them all back. Not reentrant: every acquisition takes permits of its
 * own. Its limit is stored with it: a caller created with another number gets a ConflictError,
 * unless the limit was changed on purpose with `setPermits()`, which every caller then adopts.
 */
export class Semaphore extends Lock {
  readonly #rt: Engine;
  /** The target acquisitions send: its `limit` is the one stored when Redis has none. */
  readonly #current: { target: SharedTarget };
  /** setPermits() calls made by this object: only the latest one's limit is adopted. */
  #changes = 0;

  private constructor(token: typeof INTERNAL, rt: Engine, key: string, ttlMs: number, permits: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.semaphore()");
    const keys = rt.keys.shared(key, "sem");
    const current: { target: SharedTarget } = { target: { family: "shared", keys, limit: permits } };
    super(rt, {
      key,
      get target() { return current.target; },
      lockId: keys.holders,
      channel: keys.channel,
      mode: "s",
      maxPermits: () => current.target.limit,
      ttlMs,
      sharesByOwner: false,
      reentry: () => ({ kind: "fresh" }),
    });
    this.#rt = rt;
    this.#current = current;
  }

  /** @internal Use `Surelock.semaphore()`. */
  static _create(rt: Engine, key: string, ttlMs: number, permits: number): Semaphore {
    return new Semaphore(INTERNAL, rt, key, ttlMs, permits);
  }

  /**
   * The limit this object knows: the one it was created with, or the last it set with
   * `setPermits()`. It bounds the `permits` an acquisition may ask for here, and is stored when
   * Redis has no limit for the semaphore. After another process's `setPermits()`, Redis's limit
   * rules (acquisitions follow it) and this number may be older.
   */
  get permits(): number {
    return this.#current.target.limit;
  }

  /**
   * Waits for `permits` permits (default 1), taken at once, and returns their lease. Rejects as
   * every lock's `acquire` does; with ConflictError if the semaphore has fewer than `permits` in
   * Redis (its limit was lowered by another process).
   */
  override acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    return super.acquire(options);
  }

  /** One attempt at `permits` permits (default 1): their lease, or null if they are not free. */
  override tryAcquire(options?: SemaphoreTryAcquireOptions): Promise<Lease | null> {
    return super.tryAcquire(options);
  }

  /** Takes `permits` permits (default 1), runs `work(lease)`, gives them back (see `Mutex.withLock`). */
  override withLock<T>(work: LockedWork<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    return super.withLock(work, options);
  }

  /**
   * Changes the limit stored with the semaphore to `permits`, for every caller, in every process
   * (they adopt it; their own number only counts when Redis has none stored). Raised: the
   * waiters that now fit are served at once, in arrival order. Lowered: holders keep their
   * permits, and new acquisitions wait until usage is under the new limit; a waiter asking for more
   * than the new limit is refused (ConflictError). This object adopts the new limit.
   * Resolves once Redis stored it; rejects with InvalidArgumentError before any I/O,
   * UnsupportedError in quorum mode (the limit is fixed there: the quorum a permit needs depends on
   * it), ConnectionError if Redis cannot confirm it (it may have been applied: calling again with
   * the same number is safe), ClosedError after close().
   */
  async setPermits(permits: number): Promise<void> {
    const limit = checkPositiveInt("permits", permits, MAX_PERMITS);
    const rt = this.#rt;
    rt.assertOpen();
    const change = ++this.#changes;
    await rt.setPermits(this.#current.target, limit);
    // Calls overlapping on one connection are applied in the order they were made.
    if (change === this.#changes) this.#current.target = { ...this.#current.target, limit };
  }
}
