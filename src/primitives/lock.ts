/**
 * The three ways into every primitive (acquire, tryAcquire, withLock), written once over a small
 * per-primitive spec: which lock, which mode, and how a flow that already holds it comes in again.
 */
import { driftMs } from "../clock.js";
import { publish } from "../diagnostics.js";
import { ConnectionError, DeadlockError, LockTimeoutError, QuorumError } from "../errors.js";
import { Lease } from "../lease/lease.js";
import type { Runtime } from "../runtime.js";
import type { AcquireCall, HoldMode, LockTarget } from "../store/types.js";
import { checkFunction, checkOptions, checkOwner, checkPositiveInt, checkSignal, checkTimeout, checkTtl } from "../validate.js";
import { refusal, type Obtained } from "../waiting/obtained.js";
import { ticketLeaseMs } from "../waiting/waiting-room.js";
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

/** How a flow that holds `section` on this lock comes in again. */
export type Reentry =
  | { readonly kind: "fresh" }
  /** One more entry on the section's hold. */
  | { readonly kind: "join"; readonly hold: string }
  /** A hold of its own, let in past the queue because the flow holds `via` (a nested read). */
  | { readonly kind: "nested"; readonly via: string }
  | { readonly kind: "deadlock"; readonly why: string };

/** One primitive, as the lock engine needs it. */
export interface LockSpec {
  readonly key: string;
  readonly target: LockTarget;
  /** The re-entry identity: sections of this id are this lock's. */
  readonly lockId: string;
  /** More ids a `withLock` section of this lock also stands for (a multiLock: each key's mutex). */
  readonly sectionIds?: readonly string[];
  /** Its wake-up channel (a multi-key lock: each key's). */
  readonly channel: string | readonly string[];
  readonly mode: HoldMode;
  /**
   * A semaphore's: the largest `permits` an acquisition may ask for now (its limit). Without it,
   * every acquisition takes one, and a `permits` option is refused.
   */
  readonly maxPermits?: () => number;
  readonly ttlMs: number;
  /** Whether an explicit `owner` joins the hold that owner has (mutexes and write sides). */
  readonly sharesByOwner: boolean;
  reentry(section: Section | undefined): Reentry;
}

interface Wanted {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly owner: string | undefined;
  readonly leaseTimeMs: number | undefined;
  readonly permits: number;
}

/** The lock engine every primitive extends (not exported: the primitives are). */
export abstract class Lock implements Lockable {
  /** The user's key. */
  readonly key: string;
  readonly #rt: Runtime;
  readonly #spec: LockSpec;

  /** @internal */
  protected constructor(rt: Runtime, spec: LockSpec) {
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
  async acquire(options?: AcquireOptions): Promise<Lease> {
    return this.#acquire(this.#check(options, ["timeout", "signal", "owner", "leaseTime"]));
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
    const lease = await this.#acquire(this.#check(options, ["timeout", "signal", "owner", "leaseTime"]));
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
    const reentry: Reentry = w.owner !== undefined && spec.sharesByOwner ? { kind: "fresh" } : spec.reentry(section);
    if (reentry.kind === "deadlock") throw new DeadlockError(this.key, reentry.why);
    const ttlMs = w.leaseTimeMs ?? spec.ttlMs;
    const hold = rt.ids.id();
    const call: AcquireCall = {
      target: spec.target,
      ask: {
        owner: w.owner ?? (reentry.kind === "join" ? section!.lease.owner : rt.ids.owner()),
        hold, ttlMs, mode: spec.mode, permits: w.permits,
        ticketLeaseMs: w.timeoutMs === 0 || reentry.kind !== "fresh" ? 0 : ticketLeaseMs(ttlMs),
        order: Date.now(),
      },
      entry: reentry.kind === "join" ? rt.ids.id() : hold,
      join: reentry.kind === "join" ? reentry.hold : reentry.kind === "nested" ? reentry.via
        : w.owner !== undefined && spec.sharesByOwner ? "*" : "",
    };
    let got: Obtained;
    for (let tries = 0; ; tries++) {
      if (reentry.kind === "fresh") {
        // After an answer that came too late (below), the next try waits only for what is left of
        // the caller's timeout: a whole new one made the call last up to twice as long (torture:
        // a 5.8 s timeout whose first answer lapsed on a stalled connection rejected after 10.1 s).
        let timeoutMs = w.timeoutMs;
        if (tries > 0 && timeoutMs > 0 && timeoutMs < Infinity) {
          timeoutMs = startedAt + w.timeoutMs - rt.clock.now();
          if (timeoutMs <= 0) throw new LockTimeoutError(spec.target.keys.key, rt.clock.now() - startedAt, w.timeoutMs);
        }
        got = await rt.waiting.acquire({ call, channel: spec.channel, timeoutMs, signal: w.signal }).catch((error: unknown) => {
          // A later try's timeout is the caller's: it says what the caller asked for and waited.
          if (tries === 0 || !(error instanceof LockTimeoutError)) throw error;
          throw new LockTimeoutError(error.key, rt.clock.now() - startedAt, w.timeoutMs, "lock", error.cause === undefined ? undefined : { cause: error.cause });
        });
      } else {
        const { result, sentAt } = await rt.waiting.once(call, w.signal);
        if (result.status === "busy") throw new DeadlockError(this.key, "a nested acquisition found the lock held by another hold");
        if (result.status === "gone" || result.status === "conflict") {
          if (result.status === "gone") section?.lease._hold.lose("expired", "found when re-entering");
          throw refusal(this.key, result, call.ask.permits);
        }
        // The section's hold was lost while this re-entry was on the wire: it cannot be re-entered
        // now either (a lease on it would outlive the loss its section was told of). What this
        // call added, an entry or a nested read's hold, is given back.
        const lostMeanwhile = section?.lease._hold.lost;
        if (lostMeanwhile) {
          rt.store.release(result.ref, call.entry).catch(() => {});
          throw lostMeanwhile;
        }
        got = { ref: result.ref, entry: call.entry, entered: result.status === "entered", sentAt, pttlMs: result.pttlMs, attempts: 1 };
      }
      // An answer so late that the lease is already unsafe (a paused process): give it back, try again.
      if (reentry.kind !== "fresh" || got.sentAt + got.pttlMs - driftMs(got.pttlMs) > rt.clock.now()) break;
      await rt.store.abandon(call);
    }
    const leaseHold = rt.holdFor(got, call.ask.owner, ttlMs, w.leaseTimeMs === undefined, call.ask.permits);
    const lease = Lease._create(leaseHold, got.entry, rt);
    if (w.leaseTimeMs !== undefined && !got.entered && got.pttlMs < ttlMs) {
      // A release granted it with what was left of our ticket's lease (3 s at most), and nobody
      // renews a fixed lease: give it its whole length once, counted from now.
      await lease.extend(ttlMs).catch(async (error: unknown) => {
        await lease.release().catch(() => {});
        throw error;
      });
    }
    publish("acquire", () => ({
      key: this.key, fencingToken: lease.fencingToken, reentered: got.entered, waitedMs: rt.clock.now() - startedAt, attempts: got.attempts,
    }));
    return lease;
  }
}
