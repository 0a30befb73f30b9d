/**
 * A read-write lock: many readers or one writer. A waiting writer holds new readers back, so a
 * stream of readers cannot starve it. A flow holding the write side may also read (re-entry);
 * a flow holding only the read side must not take the write side (it would wait for itself).
 */
import type { Context } from "../context.js";
import { now } from "../clock.js";
import type { LockKeys } from "../keys.js";
import { Hold } from "../lease.js";
import type { Ticket } from "../store.js";
import type { Attempt } from "../waiting.js";
import { Lockable } from "./lockable.js";

/** Options of `Surelock.readWriteLock()`. */
export interface ReadWriteLockOptions {
  /** Lease length in ms (default: the Surelock's `ttl`). */
  readonly ttl?: number;
}

/** How long a refused writer's claim keeps new readers out; its next attempt renews it. */
const WRITER_MARK_MS = 2_000;

/** The read or the write side of a ReadWriteLock, used like a Mutex. */
export class ReadWriteSide extends Lockable {
  /** Which side this is. */
  readonly mode: "read" | "write";
  /** @internal */
  protected readonly lockId: string;
  /** @internal */
  protected readonly lineId: string;
  /** @internal */
  protected readonly channel: string;
  /** @internal */
  protected readonly reentrant: boolean;
  /** @internal */
  protected override readonly queued: boolean;
  /** @internal */
  protected readonly kind = "rw";
  readonly #keys: LockKeys;

  /** @internal */
  constructor(ctx: Context, key: string, ttlMs: number, mode: "read" | "write") {
    super(ctx, key, ttlMs);
    this.mode = mode;
    this.#keys = ctx.keys.of(key, "rw");
    // Both sides share the re-entry identity, so a read nested in a write joins its owner.
    this.lockId = this.#keys.lock;
    this.lineId = `${this.#keys.lock}:${mode}`;
    this.channel = this.#keys.channel;
    this.reentrant = mode === "write";
    // Writers queue among themselves; readers are held back by a waiting writer's mark instead.
    this.queued = mode === "write";
  }

  /** @internal */
  protected async attempt(owner: string, ticket: Ticket | undefined): Promise<Attempt<Hold>> {
    const sentAt = now();
    const k = this.#keys;
    if (this.mode === "write") {
      const reply = await this.ctx.store.acquireExclusive(k, { owner, ttlMs: this.ttlMs, writerMarkMs: WRITER_MARK_MS, ...(ticket && { ticket }) });
      return this.held(reply, (token) => new Hold(k, k.lock, "h", owner, token, this.ttlMs, sentAt), owner);
    }
    const inherited = this.ctx.reentrancy.ownerOf(this.lockId) ?? owner;
    const member = `${inherited}:${this.ctx.newOwner()}`;
    const reply = await this.ctx.store.acquireShared(k, { member, owner: inherited, ttlMs: this.ttlMs, permits: 0, writer: k });
    return this.held(reply, (token) => new Hold(k, k.shared, "z", member, token, this.ttlMs, sentAt), owner);
  }
}

/** Many readers or one writer on one key: `read()` and `write()` are used like a Mutex. */
export class ReadWriteLock {
  /** The user's key. */
  readonly key: string;
  readonly #read: ReadWriteSide;
  readonly #write: ReadWriteSide;

  /** @internal Use `Surelock.readWriteLock()`. */
  constructor(ctx: Context, key: string, ttlMs: number) {
    this.key = key;
    this.#read = new ReadWriteSide(ctx, key, ttlMs, "read");
    this.#write = new ReadWriteSide(ctx, key, ttlMs, "write");
  }

  /** The shared side: any number of readers while no one writes. */
  read(): ReadWriteSide {
    return this.#read;
  }

  /** The exclusive side: one writer, no readers. */
  write(): ReadWriteSide {
    return this.#write;
  }
}
