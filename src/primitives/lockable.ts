/**
 * The three ways into every primitive (acquire, tryAcquire, withLock), written once: argument
 * checks, owner and re-entry, the waiting room, and the lease's life. A primitive only says how
 * one attempt is made.
 */
import type { Context } from "../context.js";
import { now } from "../clock.js";
import { publish } from "../diagnostics.js";
import { ConnectionError, LockTimeoutError, QuorumError } from "../errors.js";
import { Hold, Lease } from "../lease.js";
import type { Ticket } from "../store.js";
import type { Attempt } from "../waiting.js";
import { checkFunction, checkOptions, checkOwner, checkSignal, checkTimeout } from "../validate.js";

/** Options of `acquire`. */
export interface AcquireOptions {
  /** Longest wait in ms; 0 means one attempt. Default: wait until `signal` aborts. */
  readonly timeout?: number;
  /** Gives up the wait; the acquire rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Acquire as this owner: holders with the same owner share (re-enter) the lock, across flows and processes. */
  readonly owner?: string;
}

/** Options of `tryAcquire`. */
export interface TryAcquireOptions {
  /** Acquire as this owner (see AcquireOptions.owner). */
  readonly owner?: string;
}

/** Options of `withLock`: those of `acquire`. */
export type WithLockOptions = AcquireOptions;

/** The work run by `withLock`: it receives the lease (pass `lease.signal` on to your I/O). */
export type LockedWork<T> = (lease: Lease) => Promise<T> | T;

interface Waiting {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly owner: string | undefined;
}

export abstract class Lockable {
  /** The user's key. */
  readonly key: string;
  /** @internal */
  protected readonly ctx: Context;
  /** @internal Lease length in ms. */
  protected readonly ttlMs: number;

  /** @internal */
  protected constructor(ctx: Context, key: string, ttlMs: number) {
    this.ctx = ctx;
    this.key = key;
    this.ttlMs = ttlMs;
  }

  /** @internal Identity for re-entry: flows holding it under an owner re-enter with that owner. */
  protected abstract readonly lockId: string;
  /** @internal Local waiters of the same line are served one at a time. */
  protected abstract readonly lineId: string;
  /** @internal */
  protected abstract readonly channel: string;
  /** @internal Whether a flow that holds it re-enters rather than taking another entry. */
  protected abstract readonly reentrant: boolean;
  /** @internal Queued primitives hold a ticket in the lock's queue in Redis while they wait. */
  protected readonly queued: boolean = false;
  /** @internal Fair: a ticket per waiter (arrival order) instead of one per local line. */
  protected readonly fair: boolean = false;
  /** @internal Key space of the primitive (for the queue's keys). */
  protected abstract readonly kind: "mutex" | "rw" | "sem";
  /** @internal One attempt in Redis; a Hold when it is ours. */
  protected abstract attempt(owner: string, ticket: Ticket | undefined): Promise<Attempt<Hold>>;

  /**
   * Waits for the lock and returns its lease. Rejects with LockTimeoutError after `timeout` ms,
   * with `signal.reason` when the signal aborts, ConnectionError if Redis cannot be reached.
   */
  async acquire(options?: AcquireOptions): Promise<Lease> {
    const waiting = this.#check(options, ["timeout", "signal", "owner"]);
    return this.#acquire(waiting);
  }

  /** One attempt, no waiting: the lease, or null if someone else holds the lock. */
  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const waiting = { ...this.#check(options, ["owner"]), timeoutMs: 0 };
    try {
      return await this.#acquire(waiting);
    } catch (error) {
      if (error instanceof LockTimeoutError) return null;
      throw error;
    }
  }

  /**
   * Acquires, runs `work(lease)`, releases, and returns what `work` returned. Nested `withLock`
   * (or `acquire`) of the same lock inside `work` re-enters. Rejects with LockLostError if the
   * lease was lost while `work` ran, even when `work` resolved; if `work` threw, its error wins.
   */
  async withLock<T>(work: LockedWork<T>, options?: WithLockOptions): Promise<T> {
    checkFunction("work", work);
    const waiting = this.#check(options, ["timeout", "signal", "owner"]);
    const lease = await this.#acquire(waiting);
    let value: T;
    try {
      value = await this.ctx.reentrancy.run(this.lockId, lease.owner, () => work(lease));
    } catch (error) {
      await lease.release().catch((releaseError: unknown) => {
        publish("error", () => ({ key: this.key, operation: "release", error: releaseError as Error }));
      });
      throw error;
    }
    try {
      await lease.release();
    } catch (error) {
      // Lost: the section may not have been exclusive, the caller must know. Unreachable at
      // release: the lease was still valid when the work ended, so the result stands.
      if (!(error instanceof ConnectionError || error instanceof QuorumError)) throw error;
      publish("error", () => ({ key: this.key, operation: "release", error }));
    }
    return value;
  }

  #check(options: unknown, allowed: readonly (keyof AcquireOptions)[]): Waiting {
    const o = checkOptions<AcquireOptions>("options", options, allowed);
    const waiting: Waiting = {
      timeoutMs: o.timeout === undefined ? Infinity : checkTimeout("options.timeout", o.timeout),
      signal: o.signal === undefined ? undefined : checkSignal("options.signal", o.signal),
      owner: o.owner === undefined ? undefined : checkOwner("options.owner", o.owner),
    };
    this.ctx.assertOpen();
    return waiting;
  }

  async #acquire(w: Waiting): Promise<Lease> {
    const startedAt = now();
    const inherited = this.reentrant ? this.ctx.reentrancy.ownerOf(this.lockId) : undefined;
    const owner = w.owner ?? inherited ?? this.ctx.newOwner();
    const reentry = this.reentrant && this.ctx.holds.has(this.#holdId(owner));
    let attempts = 0;
    const hold = await this.ctx.waiting.acquire<Hold>({
      key: this.key,
      channel: this.channel,
      line: this.lineId,
      timeoutMs: w.timeoutMs,
      signal: w.signal,
      queued: this.queued,
      ttlMs: this.ttlMs,
      fair: this.fair,
      skipLine: reentry,
      attempt: (ticket) => {
        attempts++;
        this.ctx.assertOpen();
        return this.attempt(owner, ticket);
      },
      leave: (ticketId) => this.ctx.store.leaveQueue(this.ctx.keys.of(this.key, this.kind), ticketId),
      abandon: (abandoned) => {
        if (abandoned.leases.size === 0) void this.ctx.store.release(abandoned).catch(() => {});
      },
    });
    const holdId = this.#holdId(owner);
    const lease = new Lease(hold, owner, this.ctx.store, this.ctx.watchdog, () => {
      if (hold.leases.size === 0 && this.ctx.holds.get(holdId) === hold) this.ctx.holds.delete(holdId);
    });
    if (this.reentrant) this.ctx.holds.set(holdId, hold);
    publish("acquire", () => ({
      key: this.key, fencingToken: lease.fencingToken, reentered: hold.leases.size > 1,
      waitedMs: now() - startedAt, attempts,
    }));
    return lease;
  }

  /** @internal The hold this instance already has for (lock, owner), when re-entering. */
  protected existingHold(owner: string, token: bigint): Hold | undefined {
    const hold = this.ctx.holds.get(this.#holdId(owner));
    return hold && hold.token === token && !hold.lost ? hold : undefined;
  }

  #holdId(owner: string): string {
    return `${this.lockId}\0${owner}`;
  }

  /** @internal Turns a reply into a hold, or a wait hint. Shared by the primitives. */
  protected held(reply: { status: string; token?: bigint; retryInMs?: number }, make: (token: bigint) => Hold, owner: string): Attempt<Hold> {
    if (reply.status === "busy" || reply.token === undefined) return { retryInMs: reply.retryInMs ?? 0 };
    const existing = reply.status === "reentered" ? this.existingHold(owner, reply.token) : undefined;
    const hold = existing ?? make(reply.token);
    if (reply.status === "reentered" && !existing && this.ctx.madeOwner(owner)) {
      // A re-entry under an owner only we know, without a hold of ours: the client resent our
      // acquire after a reconnect and it ran twice. Keep one entry, give the duplicate back.
      void this.ctx.store.release(hold).catch(() => {});
    }
    if (hold.leases.size === 0 && now() >= hold.validUntilAt) {
      // The reply came so late that the lease is already unsafe: give it back and try again.
      void this.ctx.store.release(hold).catch(() => {});
      return { retryInMs: 0 };
    }
    return { value: hold };
  }
}
