/**
 * The facade: checks options, picks single-node or quorum mode, hands out primitives, and
 * closes everything it opened (never the user's clients).
 */
import { Endpoint } from "./adapters/endpoint.js";
import { toAdapter } from "./adapters/detect.js";
import { Context } from "./context.js";
import { InvalidArgumentError } from "./errors.js";
import { FencingGuard } from "./guard.js";
import { KeySpace } from "./keys.js";
import { Mutex, type MutexOptions } from "./primitives/mutex.js";
import type { LockedWork, WithLockOptions } from "./primitives/lockable.js";
import { ReadWriteLock, type ReadWriteLockOptions } from "./primitives/read-write-lock.js";
import { Semaphore, type SemaphoreOptions } from "./primitives/semaphore.js";
import { QuorumStore } from "./quorum/quorum-store.js";
import { Reentrancy } from "./reentrancy.js";
import { SingleStore, type Store } from "./store.js";
import {
  checkBoolean, checkKey, checkOptions, checkPositiveInt, checkPrefix, checkTtl,
} from "./validate.js";
import { WaitingRoom } from "./waiting.js";
import { Watchdog } from "./watchdog.js";

/**
 * A Redis client: an ioredis `Redis` or `Cluster`, a node-redis client or cluster (v4+), or an
 * object implementing `RedisAdapter`. Recognised at run time by its shape.
 */
export type RedisClient = object;

/** Options of `new Surelock()`. */
export interface SurelockOptions {
  /** One client (standalone, Sentinel-backed or Cluster), or an array of independent primaries for quorum (Redlock) mode. */
  readonly redis: RedisClient | readonly RedisClient[];
  /** Namespace of every key surelock writes. Default `"surelock"`. */
  readonly prefix?: string;
  /** Default lease length in ms. Default 30 000. The watchdog renews at ttl/3. */
  readonly ttl?: number;
  /**
   * Longest wait for one Redis reply, in ms, before it counts as a ConnectionError. Default 5 000
   * with one client; 200 per node in quorum mode, so one dead node cannot slow an acquire down.
   */
  readonly commandTimeout?: number;
  /**
   * Waiters are woken by the release itself; as a safety net against a lost announcement they
   * also retry at least this often, in ms. Default 1 000.
   */
  readonly pollInterval?: number;
  /**
   * Replicated acquisitions: after every acquire, renewal and guarded write, wait (Redis WAIT, on
   * the same connection) until `count` replicas have it, for at most `timeout` ms. If fewer do,
   * an acquire gives the lock back and rejects with ConnectionError; a renewal counts as failed.
   * Narrows, but does not close, the window in which a failover loses a lock: see
   * docs/deployments/sentinel.md. Default: no waiting.
   */
  readonly replicas?: { readonly count: number; readonly timeout: number };
}

const OPTION_NAMES = ["redis", "prefix", "ttl", "commandTimeout", "pollInterval", "replicas"] as const;

/** Entry point: one per application (per set of Redis clients). */
export class Surelock {
  /** The key namespace. */
  readonly prefix: string;
  /** Default lease length in ms. */
  readonly ttl: number;
  readonly #ctx: Context;
  readonly #endpoints: readonly Endpoint[];
  #closing: Promise<void> | undefined;

  constructor(options: SurelockOptions) {
    if (options === undefined || options === null || typeof options !== "object") {
      throw new InvalidArgumentError("options", options, "an options object with at least `redis`");
    }
    const o = checkOptions<SurelockOptions>("options", options, OPTION_NAMES);
    if (o.redis === undefined) throw new InvalidArgumentError("options.redis", undefined, "a Redis client or an array of them");
    this.prefix = o.prefix === undefined ? "surelock" : checkPrefix("options.prefix", o.prefix);
    this.ttl = o.ttl === undefined ? 30_000 : checkTtl("options.ttl", o.ttl);
    const quorum = Array.isArray(o.redis);
    const clients: readonly unknown[] = quorum ? (o.redis as readonly unknown[]) : [o.redis];
    if (clients.length === 0) throw new InvalidArgumentError("options.redis", o.redis, "at least one Redis client");
    const timeoutMs = o.commandTimeout === undefined
      ? (quorum ? 200 : 5_000)
      : checkPositiveInt("options.commandTimeout", o.commandTimeout, 600_000);
    const pollMs = o.pollInterval === undefined ? 1_000 : checkPositiveInt("options.pollInterval", o.pollInterval, 600_000);
    const r = o.replicas === undefined ? undefined : checkOptions<{ count: number; timeout: number }>("options.replicas", o.replicas, ["count", "timeout"]);
    const replicas = r && {
      replicas: checkPositiveInt("options.replicas.count", r.count, 1_000),
      timeoutMs: checkPositiveInt("options.replicas.timeout", r.timeout, 600_000),
    };
    this.#endpoints = clients.map((c, i) => new Endpoint(toAdapter(c, quorum ? `options.redis[${i}]` : "options.redis"), timeoutMs, replicas));

    const store: Store = quorum
      ? new QuorumStore(this.#endpoints.map((e) => new SingleStore(e)))
      : new SingleStore(this.#endpoints[0] as Endpoint);
    this.#ctx = new Context({
      store,
      watchdog: new Watchdog((holds) => store.renew(holds)),
      waiting: new WaitingRoom(() => store.createSubscribers(), pollMs),
      keys: new KeySpace(this.prefix),
      reentrancy: new Reentrancy(),
      defaultTtlMs: this.ttl,
    });
  }

  /** A reentrant mutex on `key`. Cheap: create one per use or keep it, as you like. */
  mutex(key: string, options?: MutexOptions): Mutex {
    checkKey("key", key);
    const o = checkOptions<MutexOptions>("options", options, ["ttl", "fair"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    const fair = o.fair === undefined ? false : checkBoolean("options.fair", o.fair);
    this.#ctx.assertOpen();
    return new Mutex(this.#ctx, key, ttl, fair);
  }

  /** A read-write lock on `key`: `read()` and `write()` are each used like a mutex. */
  readWriteLock(key: string, options?: ReadWriteLockOptions): ReadWriteLock {
    checkKey("key", key);
    const o = checkOptions<ReadWriteLockOptions>("options", options, ["ttl"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#ctx.assertOpen();
    return new ReadWriteLock(this.#ctx, key, ttl);
  }

  /** A semaphore on `key` with `permits` concurrent holders. */
  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    checkKey("key", key);
    if (options === undefined) throw new InvalidArgumentError("options.permits", undefined, "an integer from 1 to 1000000");
    const o = checkOptions<SemaphoreOptions>("options", options, ["permits", "ttl"]);
    const permits = checkPositiveInt("options.permits", o.permits, 1_000_000);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#ctx.assertOpen();
    return new Semaphore(this.#ctx, key, ttl, permits);
  }

  /** Shorthand for `mutex(key).withLock(work, options)`. */
  withLock<T>(key: string, work: LockedWork<T>, options?: WithLockOptions): Promise<T> {
    return this.mutex(key).withLock(work, options);
  }

  /**
   * A fencing guard for `resource`: Redis writes that are refused when a newer lock holder has
   * written already. Single-node mode only (in quorum mode, keep the token next to your data).
   */
  guard(resource: string): FencingGuard {
    checkKey("resource", resource);
    this.#ctx.assertOpen();
    if (this.#endpoints.length !== 1) {
      throw new InvalidArgumentError("resource", resource, "a Surelock with a single Redis client (guards are not replicated in quorum mode)");
    }
    return new FencingGuard(this.#endpoints[0] as Endpoint, this.#ctx.keys, resource);
  }

  /**
   * Stops the watchdog, releases the leases still held (their signals abort with LockLostError),
   * rejects pending acquires with ClosedError and closes the wake-up connections. Never closes the
   * clients you passed in. Idempotent: a second call joins the first.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const ctx = this.#ctx;
    ctx.closed = true;
    const holds = ctx.watchdog.close();
    ctx.holds.clear();
    await Promise.all([
      ctx.waiting.close(),
      ...holds.map(async (hold) => {
        hold.lose("expired", "the Surelock instance was closed");
        await ctx.store.release(hold).catch(() => {});
      }),
    ]);
  }
}
