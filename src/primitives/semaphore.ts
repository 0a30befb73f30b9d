/** A counting semaphore: up to `permits` holders at once. */
import type { Context } from "../context.js";
import { now } from "../clock.js";
import type { LockKeys } from "../keys.js";
import { Hold } from "../lease.js";
import type { Attempt } from "../waiting.js";
import { Lockable } from "./lockable.js";

/** Options of `Surelock.semaphore()`. */
export interface SemaphoreOptions {
  /** How many holders may hold it at once (required). */
  readonly permits: number;
  /** Lease length in ms (default: the Surelock's `ttl`). */
  readonly ttl?: number;
}

/**
 * A semaphore of `permits` leases. Not reentrant: every acquisition takes a permit of its own
 * (a flow that nests acquisitions beyond `permits` waits for itself). All holders of one key
 * must agree on `permits`.
 */
export class Semaphore extends Lockable {
  /** How many holders may hold it at once. */
  readonly permits: number;
  /** @internal */
  protected readonly lockId: string;
  /** @internal */
  protected readonly lineId: string;
  /** @internal */
  protected readonly channel: string;
  /** @internal */
  protected readonly reentrant = false;
  /** @internal */
  protected readonly kind = "sem";
  readonly #keys: LockKeys;

  /** @internal Use `Surelock.semaphore()`. */
  constructor(ctx: Context, key: string, ttlMs: number, permits: number) {
    super(ctx, key, ttlMs);
    this.permits = permits;
    this.#keys = ctx.keys.of(key, "sem");
    this.lockId = this.lineId = this.#keys.shared;
    this.channel = this.#keys.channel;
  }

  /** @internal */
  protected async attempt(owner: string): Promise<Attempt<Hold>> {
    const member = `${owner}:${this.ctx.newOwner()}`;
    const sentAt = now();
    const reply = await this.ctx.store.acquireShared(this.#keys, { member, owner, ttlMs: this.ttlMs, permits: this.permits });
    return this.held(reply, (token) => new Hold(this.#keys, this.#keys.shared, "z", member, token, this.ttlMs, sentAt), owner);
  }
}
