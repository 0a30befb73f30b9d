/** A reentrant mutual-exclusion lock on one key. */
import type { Context } from "../context.js";
import { now } from "../clock.js";
import type { LockKeys } from "../keys.js";
import { Hold } from "../lease.js";
import type { Attempt } from "../waiting.js";
import type { Ticket } from "../store.js";
import { Lockable } from "./lockable.js";

/** Options of `Surelock.mutex()`. */
export interface MutexOptions {
  /** Lease length in ms (default: the Surelock's `ttl`). The watchdog renews at ttl/3. */
  readonly ttl?: number;
  /**
   * First come, first served across processes: waiters queue in Redis and the lock goes to the
   * longest-waiting live one. A waiter that vanishes is dropped after a few seconds. Default false.
   */
  readonly fair?: boolean;
}

/**
 * A reentrant mutex: one owner at a time; nested acquisitions by the holding flow (or with the
 * same explicit `owner`) re-enter, and the lock is freed at the last release.
 */
export class Mutex extends Lockable {
  /** @internal */
  protected readonly lockId: string;
  /** @internal */
  protected readonly lineId: string;
  /** @internal */
  protected readonly channel: string;
  /** @internal */
  protected readonly reentrant = true;
  /** @internal */
  protected override readonly queued = true;
  /** @internal */
  protected readonly kind = "mutex";
  /** @internal */
  protected override readonly fair: boolean;
  readonly #keys: LockKeys;

  /** @internal Use `Surelock.mutex()`. */
  constructor(ctx: Context, key: string, ttlMs: number, fair: boolean) {
    super(ctx, key, ttlMs);
    this.#keys = ctx.keys.of(key);
    this.lockId = this.#keys.lock;
    this.lineId = this.#keys.lock;
    this.channel = this.#keys.channel;
    this.fair = fair;
  }

  /** @internal */
  protected async attempt(owner: string, ticket: Ticket | undefined): Promise<Attempt<Hold>> {
    const sentAt = now();
    const reply = await this.ctx.store.acquireExclusive(this.#keys, {
      owner, ttlMs: this.ttlMs, writerMarkMs: 0, ...(ticket && { ticket }),
    });
    return this.held(reply, (token) => new Hold(this.#keys, this.#keys.lock, "h", owner, token, this.ttlMs, sentAt), owner);
  }
}
