/**
 * The three ways into every primitive (acquire, tryAcquire, withLock), written once over a small
 * per-primitive spec: which lock, which mode, and how a flow that already holds it comes in again.
 */
import { listened, publish } from "../diagnostics.js";
import { ConnectionError, DeadlockError, LockTimeoutError, QuorumError } from "../errors.js";
import type { Lease } from "../lease/lease.js";
import type { Engine, LockSpec, SectionReentry, Wanted } from "../engine.js";

export type { LockSpec, SectionReentry } from "../engine.js";
import { checkFunction, checkOptions, checkOwner, checkPositiveInt, checkSignal, checkTimeout, checkTtl } from "../validate.js";
import type { Section } from "../lease/sections.js";

/** Options of `acquire`. */
export interface AcquireOptions {
  /**
   * Longest wait in ms; 0 means one attempt; `Infinity`, until `signal` aborts. Default: the
   * Surelock's `acquireTimeout` (30 000 unless set).
   */
  readonly timeout?: number;
  /** Gives up the wait; the acquire rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Acquire as this owner: holders with the same owner share (re-enter) the lock, across flows and processes. */
  readonly owner?: string;
  /**
   * A fixed lease of this many ms: not renewed by the watchdog, it ends by itself (its signal
   * aborts at the end of its validity). Default: a lease of the lock's ttl, renewed while held.
   */
  readonly leaseTime?: number;
}

/** Options of `tryAcquire`. */
export interface TryAcquireOptions {
  /** Acquire as this owner (see AcquireOptions.owner). */
  readonly owner?: string;
  /** A fixed lease (see AcquireOptions.leaseTime). */
  readonly leaseTime?: number;
}

/** Options of `withLock`: those of `acquire`. */
export type WithLockOptions = AcquireOptions;

/** The work run by `withLock`: it receives the lease (pass `lease.signal` on to your I/O). */
export type LockedWork<T> = (lease: Lease) => Promise<T> | T;

/** What every primitive offers: the three ways in. */
export interface Lockable {
  /** The user's key. */
  readonly key: string;
  /** Waits for the lock and returns its lease (see `Mutex.acquire`). */
  acquire(options?: AcquireOptions): Promise<Lease>;
  /** One attempt: the lease, or null if the lock is busy. */
  tryAcquire(options?: TryAcquireOptions): Promise<Lease | null>;
  /** Acquires, runs `work(lease)`, releases, and returns what `work` returned. */
  withLock<T>(work: LockedWork<T>, options?: WithLockOptions): Promise<T>;
}

const ACQUIRE_OPTIONS: readonly (keyof AcquireOptions)[] = ["timeout", "signal", "owner", "leaseTime"];

/** The lock engine every primitive extends (not exported: the primitives are). */
export abstract class Lock implements Lockable {
  /** The user's key. */
  readonly key: string;
  readonly #rt: Engine;
  readonly #spec: LockSpec;

  /** @internal */
  protected constructor(rt: Engine, spec: LockSpec) {
    this.#rt = rt;
    this.#spec = spec;
    this.key = spec.key;
  }

  /**
   * Waits for the lock and returns its lease. Rejects with LockTimeoutError after `timeout` ms
   * (default: the Surelock's `acquireTimeout`; its `cause` is a ConnectionError when Redis did not
   * answer during the wait),
   * with `signal.reason` when the signal aborts, ClosedError when the Surelock is closed,
   * ConnectionError (QuorumError) if Redis cannot be reached.
   */
  acquire(options?: AcquireOptions): Promise<Lease> {
    // Not an async function: one promise fewer per acquire, and bad options still reject.
    let wanted: Wanted;
    try {
      wanted = this.#check(options, ACQUIRE_OPTIONS);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.#acquire(wanted);
  }

  /** One attempt, no waiting: the lease, or null if someone else holds the lock. */
  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const wanted = { ...this.#check(options, ["owner", "leaseTime"]), timeoutMs: 0 };
    return this.#acquire(wanted).catch((error: unknown) => {
      if (error instanceof LockTimeoutError) return null;
      throw error;
    });
  }

  /**
   * Acquires, runs `work(lease)`, releases, and returns what `work` returned. Inside `work`, the
   * same lock re-enters (see docs/api.md, Reentrancy). Rejects with LockLostError if the lease was
   * lost while `work` ran, even when `work` resolved; if `work` threw, its error wins.
   */
  async withLock<T>(work: LockedWork<T>, options?: WithLockOptions): Promise<T> {
    checkFunction("work", work);
    const lease = await this.#acquire(this.#check(options, ACQUIRE_OPTIONS));
    const section: Section = { lease, mode: this.#spec.mode === "r" ? "r" : "w", open: true };
    let value: T;
    try {
      value = await this.#rt.sections.run([this.#spec.lockId, ...(this.#spec.sectionIds ?? [])], section, () => work(lease));
    } catch (error) {
      section.open = false;
      await lease.release().catch((releaseError: unknown) => {
        publish("error", () => ({ key: this.key, operation: "release", error: releaseError as Error }));
      });
      throw error;
    }
    section.open = false;
    try {
      await lease.release();
    } catch (error) {
      // Lost: the section may not have been exclusive, the caller must know. Unconfirmed release:
      // the lease was valid when the work ended, so the result stands; the lock expires by itself.
      if (!(error instanceof ConnectionError || error instanceof QuorumError)) throw error;
      publish("error", () => ({ key: this.key, operation: "release", error }));
    }
    return value;
  }

  #check(options: unknown, allowed: readonly (keyof AcquireOptions)[]): Wanted {
    const max = this.#spec.maxPermits;
    const o = checkOptions<AcquireOptions & { permits?: number }>("options", options, max ? [...allowed, "permits"] : allowed);
    const wanted: Wanted = {
      permits: o.permits === undefined || !max ? 1 : checkPositiveInt("options.permits", o.permits, max()),
      timeoutMs: o.timeout === undefined ? this.#rt.acquireTimeoutMs : checkTimeout("options.timeout", o.timeout),
      signal: o.signal === undefined ? undefined : checkSignal("options.signal", o.signal),
      owner: o.owner === undefined ? undefined : checkOwner("options.owner", o.owner),
      leaseTimeMs: o.leaseTime === undefined ? undefined : checkTtl("options.leaseTime", o.leaseTime),
    };
    this.#rt.assertOpen();
    return wanted;
  }

  async #acquire(w: Wanted): Promise<Lease> {
    const rt = this.#rt;
    const spec = this.#spec;
    const startedAt = rt.clock.now();
    const section = rt.sections.current(spec.lockId);
    // A section whose hold was lost cannot be re-entered, nor left for a fresh acquisition.
    const lost = section?.lease._hold.lost;
    if (lost) throw lost;
    const reentry: SectionReentry = w.owner !== undefined && spec.sharesByOwner ? { kind: "fresh" } : spec.reentry(section);
    if (reentry.kind === "deadlock") throw new DeadlockError(this.key, reentry.why);
    const { lease, entered, attempts } = await rt.obtain({ spec, wanted: w, section, reentry });
    if (listened("acquire")) publishAcquire(lease, entered, rt.clock.now() - startedAt, attempts);
    return lease;
  }
}

/** Out of line: a closure in `#acquire` would cost every acquire a context, listened to or not. */
function publishAcquire(lease: Lease, entered: boolean, waitedMs: number, attempts: number): void {
  publish("acquire", () => ({ key: lease.key, fencingToken: lease.fencingToken, reentered: entered, waitedMs, attempts }));
}
