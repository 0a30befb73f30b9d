/**
 * The facade: checks options, picks single-node or quorum mode, hands out primitives, and
 * closes everything it opened (never the user's clients).
 */
import { Endpoint } from "./adapters/endpoint.js";
import { toAdapter, type RedisClient } from "./adapters/detect.js";
import { systemClock, type Clock } from "./clock.js";
import { InvalidArgumentError } from "./errors.js";
import { FencingGuard } from "./guard.js";
import { KeySpace } from "./keys.js";
import { Election, type ElectionOptions } from "./primitives/election.js";
import { CountDownLatch, type LatchOptions } from "./primitives/latch.js";
import type { LockedWork, WithLockOptions } from "./primitives/lock.js";
import { MultiLock, checkMultiKeys, type MultiLockOptions } from "./primitives/multi-lock.js";
import { Mutex, type MutexOptions } from "./primitives/mutex.js";
import { ReadWriteLock, type ReadWriteLockOptions } from "./primitives/read-write-lock.js";
import { Semaphore, type SemaphoreOptions } from "./primitives/semaphore.js";
import { QuorumStore } from "./quorum/quorum-store.js";
import { QUORUM_ROUNDS } from "./quorum/rounds.js";
import { Runtime } from "./runtime.js";
import { SingleStore } from "./store/single-store.js";
import type { Store } from "./store/types.js";
import { checkBoolean, checkKey, checkOptions, checkPositiveInt, checkPrefix, checkTimeout, checkTtl, MAX_PERMITS } from "./validate.js";

export type { RedisClient } from "./adapters/detect.js";
export type { Clock } from "./clock.js";

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
   * Longest wait, in ms, of an `acquire()` or `withLock()` that passes no `timeout` of its own
   * (a per-call `timeout` overrides it; `Infinity` waits until the signal aborts). Default
   * 30 000: a waiter gives up with `LockTimeoutError` rather than hang, and when Redis did not
   * answer during the wait that error's `cause` is the `ConnectionError`. Elections' campaigns
   * and latches' waits are not bounded by it.
   */
  readonly acquireTimeout?: number;
  /**
   * Waiters are served by the release itself; as a safety net against a lost announcement each
   * waiting ticket is also refreshed (which reports a grant) at least this often, in ms. Default 1 000.
   */
  readonly pollInterval?: number;
  /**
   * How long a lock's fencing counter outlives its last holder, in ms. Default 300 000 (5 min).
   * A counter that expired restarts at the Redis server's clock in microseconds, above every
   * token it issued before, provided that clock never steps back by more than this (docs/protocol.md).
   */
  readonly counterRetention?: number;
  /**
   * Replicated acquisitions: after every acquire, renewal and guarded write, wait (Redis WAIT, on
   * the same connection) until `count` replicas have it, for at most `timeout` ms. If fewer do,
   * an acquire gives the lock back and rejects with ConnectionError; a renewal counts as failed.
   * Narrows, but does not close, the window in which a failover loses a lock: see
   * docs/deployments/sentinel.md. Default: no waiting.
   */
  readonly replicas?: { readonly count: number; readonly timeout: number };
  /**
   * The clock and timers surelock measures every lease and wait with. Default: the monotonic
   * clock and Node's timers. Tests pass a virtual one (`surelock/testing`).
   */
  readonly clock?: Clock;
}

const OPTION_NAMES = ["redis", "prefix", "ttl", "commandTimeout", "acquireTimeout", "pollInterval", "counterRetention", "replicas", "clock"] as const;

/** The default of `SurelockOptions.acquireTimeout`, in ms. */
const DEFAULT_ACQUIRE_TIMEOUT_MS = 30_000;

/** Entry point: one per application (per set of Redis clients). */
export class Surelock {
  /** The key namespace. */
  readonly prefix: string;
  /** Default lease length in ms. */
  readonly ttl: number;
  /** Longest wait of an acquire that passes no `timeout`, in ms (`Infinity`: none). */
  readonly acquireTimeout: number;
  readonly #rt: Runtime;
  readonly #endpoints: readonly Endpoint[];
  #closed: Promise<void> | undefined;

  constructor(options: SurelockOptions) {
    if (options === undefined || options === null || typeof options !== "object") {
      throw new InvalidArgumentError("options", options, "an options object with at least `redis`");
    }
    const o = checkOptions<SurelockOptions>("options", options, OPTION_NAMES);
    if (o.redis === undefined) throw new InvalidArgumentError("options.redis", undefined, "a Redis client or an array of them");
    this.prefix = o.prefix === undefined ? "surelock" : checkPrefix("options.prefix", o.prefix);
    this.ttl = o.ttl === undefined ? 30_000 : checkTtl("options.ttl", o.ttl);
    this.acquireTimeout = o.acquireTimeout === undefined ? DEFAULT_ACQUIRE_TIMEOUT_MS : checkTimeout("options.acquireTimeout", o.acquireTimeout);
    const quorum = Array.isArray(o.redis);
    const clients: readonly unknown[] = quorum ? (o.redis as readonly unknown[]) : [o.redis];
    if (clients.length === 0) throw new InvalidArgumentError("options.redis", o.redis, "at least one Redis client");
    const timeoutMs = o.commandTimeout === undefined ? (quorum ? 200 : 5_000) : checkPositiveInt("options.commandTimeout", o.commandTimeout, 600_000);
    const pollMs = o.pollInterval === undefined ? 1_000 : checkPositiveInt("options.pollInterval", o.pollInterval, 600_000);
    const keepMs = o.counterRetention === undefined ? 300_000
      : checkPositiveInt("options.counterRetention", o.counterRetention, 7 * 86_400_000);
    if (keepMs < timeoutMs * 2) {
      throw new InvalidArgumentError("options.counterRetention", o.counterRetention, `at least twice the command timeout (${timeoutMs * 2} ms)`);
    }
    const clock = o.clock === undefined ? systemClock : checkClock(o.clock);
    const r = o.replicas === undefined ? undefined : checkOptions<{ count: number; timeout: number }>("options.replicas", o.replicas, ["count", "timeout"]);
    const replicas = r && {
      replicas: checkPositiveInt("options.replicas.count", r.count, 1_000),
      timeoutMs: checkPositiveInt("options.replicas.timeout", r.timeout, 600_000),
    };
    this.#endpoints = clients.map((c, i) =>
      new Endpoint(toAdapter(c, quorum ? `options.redis[${i}]` : "options.redis"), { clock, timeoutMs, replicas }));
    const policy = {
      keepMs,
      // A replayed release arrives, if ever, while its caller still waits for it.
      replayWindowMs: Math.min(keepMs, timeoutMs * 2 + (replicas?.timeoutMs ?? 0)),
      // A grant must reach replicas before its waiter trusts it: with `replicas`, waiters attempt instead.
      grants: !quorum && replicas === undefined,
    };
    const store: Store = quorum
      ? new QuorumStore(this.#endpoints.map((e) => ({ store: new SingleStore(e, { ...policy, grants: false, ordered: true }), timeoutMs: e.timeoutMs })), clock)
      : new SingleStore(this.#endpoints[0] as Endpoint, policy);
    // One call's own bound: its deadline (plus WAIT's), and in quorum mode the rounds it may ask again.
    const callMs = timeoutMs + (replicas?.timeoutMs ?? 0);
    const callBoundMs = quorum ? QUORUM_ROUNDS * (callMs + 3 * callMs) : callMs;
    this.#rt = new Runtime({
      store, clock, keys: new KeySpace(this.prefix), defaultTtlMs: this.ttl, acquireTimeoutMs: this.acquireTimeout, pollMs, closeMs: timeoutMs, callBoundMs,
      // Quorum mode's attempt may ask again and waits for its votes to be treated: no lazy wait there.
      ...(quorum ? {} : { attemptBoundMs: callMs }),
    });
  }

  /** A reentrant mutex on `key`. Cheap: create one per use or keep it, as you like. */
  mutex(key: string, options?: MutexOptions): Mutex {
    checkKey("key", key);
    const o = checkOptions<MutexOptions>("options", options, ["ttl", "fair"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    if (o.fair !== undefined) checkBoolean("options.fair", o.fair);
    this.#rt.assertOpen();
    return Mutex._create(this.#rt, key, ttl);
  }

  /**
   * A lock over several keys at once, taken and released as one (all or none), on the same keys as
   * `mutex(key)` of each. On a Redis Cluster the keys must share one slot (a common hash tag such
   * as `{order}:a`, `{order}:b`): checked here, before any I/O.
   */
  multiLock(keys: readonly string[], options?: MultiLockOptions): MultiLock {
    const checked = checkMultiKeys(this.#rt, keys, this.#endpoints.some((e) => e.adapter.cluster));
    const o = checkOptions<MultiLockOptions>("options", options, ["ttl"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#rt.assertOpen();
    return MultiLock._create(this.#rt, checked, ttl);
  }

  /** A read-write lock on `key`: `read()` and `write()` are each used like a mutex. */
  readWriteLock(key: string, options?: ReadWriteLockOptions): ReadWriteLock {
    checkKey("key", key);
    const o = checkOptions<ReadWriteLockOptions>("options", options, ["ttl"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#rt.assertOpen();
    return ReadWriteLock._create(this.#rt, key, ttl);
  }

  /**
   * A semaphore on `key` with `permits` permits, stored with it: every caller must agree, until
   * `setPermits()` changes the limit on purpose (then every caller follows the stored one).
   */
  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    checkKey("key", key);
    if (options === undefined) throw new InvalidArgumentError("options.permits", undefined, "an integer from 1 to 1000000");
    const o = checkOptions<SemaphoreOptions>("options", options, ["permits", "ttl"]);
    const permits = checkPositiveInt("options.permits", o.permits, MAX_PERMITS);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#rt.assertOpen();
    return Semaphore._create(this.#rt, key, ttl, permits);
  }

  /**
   * Leader election among the processes that campaign for `name` (etcd's election API): the
   * leader holds a lease; `leader()` and `observe()` tell everyone who it is.
   */
  election(name: string, options?: ElectionOptions): Election {
    checkKey("name", name);
    const o = checkOptions<ElectionOptions>("options", options, ["ttl"]);
    const ttl = o.ttl === undefined ? this.ttl : checkTtl("options.ttl", o.ttl);
    this.#rt.assertOpen();
    return Election._create(this.#rt, name, ttl);
  }

  /** A countdown latch on `name` that opens after `count` count downs (stored with it: every caller must agree). */
  latch(name: string, options: LatchOptions): CountDownLatch {
    checkKey("name", name);
    if (options === undefined) throw new InvalidArgumentError("options.count", undefined, "an integer from 1 to 1000000");
    const o = checkOptions<LatchOptions>("options", options, ["count", "ttl"]);
    const count = checkPositiveInt("options.count", o.count, 1_000_000);
    const ttl = o.ttl === undefined ? 3_600_000 : checkTtl("options.ttl", o.ttl);
    this.#rt.assertOpen();
    return CountDownLatch._create(this.#rt, name, count, ttl);
  }

  /** Shorthand for `mutex(key).withLock(work, options)`. */
  withLock<T>(key: string, work: LockedWork<T>, options?: WithLockOptions): Promise<T> {
    return this.mutex(key).withLock(work, options);
  }

  /**
   * A fencing guard for `resource`: Redis writes that are refused when a newer lock holder has
   * written already, each applied once. Single-node mode only (in quorum mode, keep the token next
   * to your data).
   */
  guard(resource: string): FencingGuard {
    checkKey("resource", resource);
    this.#rt.assertOpen();
    if (this.#endpoints.length !== 1) {
      throw new InvalidArgumentError("resource", resource, "a Surelock with a single Redis client (guards are not replicated in quorum mode)");
    }
    return FencingGuard._create(this.#endpoints[0] as Endpoint, this.#rt.keys, resource, this.#rt.ids);
  }

  /**
   * Ends every wait (pending acquires reject with ClosedError), gives back the leases still held
   * (their signals abort first) and closes the wake-up connections, each step bounded by the
   * command timeout. Never closes the clients you passed in, and leaves no listener on them.
   * Idempotent: a second call joins the first.
   */
  close(): Promise<void> {
    this.#closed ??= this.#rt.close().finally(() => {
      for (const endpoint of this.#endpoints) endpoint.adapter.detach?.();
    });
    return this.#closed;
  }
}

function checkClock(value: unknown): Clock {
  const c = value as Partial<Clock> | null;
  if (typeof c !== "object" || c === null || typeof c.now !== "function" || typeof c.setTimeout !== "function" || typeof c.clearTimeout !== "function") {
    throw new InvalidArgumentError("options.clock", value, "a clock with now(), setTimeout() and clearTimeout()");
  }
  return c as Clock;
}
