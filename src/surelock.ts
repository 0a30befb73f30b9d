/**
 * The facade: checks options, picks the store (Redis single-node or quorum, PostgreSQL, etcd) and
 * its engine, hands out primitives, and closes everything it opened (never the user's clients).
 */
import { Endpoint } from "./adapters/endpoint.js";
import { toAdapter, type RedisClient } from "./adapters/detect.js";
import { systemClock, type Clock } from "./clock.js";
import { Shutdown } from "./deadline.js";
import type { StoreKind } from "./engine.js";
import { EtcdStore } from "./etcd/store.js";
import { InvalidArgumentError, UnsupportedError } from "./errors.js";
import { FencingGuard } from "./guard.js";
import { KeySpace } from "./keys.js";
import { Lease } from "./lease/lease.js";
import { Election, type ElectionOptions } from "./primitives/election.js";
import { CountDownLatch, type LatchOptions } from "./primitives/latch.js";
import type { LockedWork, WithLockOptions } from "./primitives/lock.js";
import { MultiLock, checkMultiKeys, type MultiLockOptions } from "./primitives/multi-lock.js";
import { Mutex, type MutexOptions } from "./primitives/mutex.js";
import { ReadWriteLock, type ReadWriteLockOptions } from "./primitives/read-write-lock.js";
import { Semaphore, type SemaphoreOptions } from "./primitives/semaphore.js";
import { QuorumStore } from "./quorum/quorum-store.js";
import { QUORUM_ROUNDS } from "./quorum/rounds.js";
import { EtcdBackend } from "./named/etcd.js";
import { NamedEngine } from "./named/engine.js";
import { PostgresBackend } from "./named/postgres.js";
import { PostgresStore } from "./postgres/store.js";
import type { PgPool, PgQueryable } from "./postgres/types.js";
import { Runtime } from "./runtime.js";
import { SingleStore } from "./store/single-store.js";
import type { Store } from "./store/types.js";
import { checkBoolean, checkKey, checkOptions, checkPositiveInt, checkPrefix, checkTimeout, checkTtl, MAX_PERMITS } from "./validate.js";

export type { RedisClient } from "./adapters/detect.js";
export type { Clock } from "./clock.js";
export type { StoreKind } from "./engine.js";

/** A node-postgres `Pool` as surelock uses it: it checks connections out and gives them back, never ends it. */
export interface PostgresPool {
  /** Checks a client out of the pool (node-postgres' `pool.connect()`). */
  connect(): Promise<unknown>;
}

/** `SurelockOptions.postgres` with settings of its own: the pool, and where the store's tables live. */
export interface PostgresOptions {
  /** A node-postgres `Pool` you made; surelock never ends it. */
  readonly pool: PostgresPool;
  /** The schema of the store's tables and functions (default `"surelock"`). */
  readonly schema?: string;
  /** Create or update the schema on first use (default true); false: `surelock migrate --postgres` must have run. */
  readonly createSchema?: boolean;
}

/** An `etcd3` `Etcd3` client, as surelock uses it (its KV, lease and watch layers). */
export interface EtcdClientLike {
  /** The KV layer (ranges and transactions). */
  readonly kv: object;
  /** The lease layer (grants, keep-alives, revokes). */
  readonly leaseClient: object;
  /** A watch builder (waiters watch the key ahead of them). */
  watch(): unknown;
}

/** Options of `new Surelock()`. */
export interface SurelockOptions {
  /**
   * One client (standalone, Sentinel-backed or Cluster), or an array of independent primaries for
   * quorum (Redlock) mode. Exactly one of `redis`, `postgres` and `etcd` is given.
   */
  readonly redis?: RedisClient | readonly RedisClient[];
  /**
   * A node-postgres `Pool` (or `{ pool, schema, createSchema }`): the locks live in PostgreSQL,
   * leases on the database's clock, fencing checked in your own transactions (`guard().check`).
   * Surelock never ends the pool. See docs/api.md, Stores, for what each store offers.
   */
  readonly postgres?: PostgresPool | PostgresOptions;
  /**
   * An `etcd3` `Etcd3` client: the locks live in etcd, under one session lease per Surelock kept
   * alive by its watchdog, fencing tokens are creation revisions. Surelock never closes the client.
   */
  readonly etcd?: EtcdClientLike;
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

const OPTION_NAMES = ["redis", "postgres", "etcd", "prefix", "ttl", "commandTimeout", "acquireTimeout", "pollInterval", "counterRetention", "replicas", "clock"] as const;

/** The default of `SurelockOptions.acquireTimeout`, in ms. */
const DEFAULT_ACQUIRE_TIMEOUT_MS = 30_000;

/** Entry point: one per application (per set of Redis clients). */
export class Surelock {
  /** The key namespace. */
  readonly prefix: string;
  /** Default lease length in ms. */
  readonly ttl: number;
  /** The store the locks live in: `"redis"`, `"postgres"` or `"etcd"` (which option was given). */
  readonly store: StoreKind;
  /** Longest wait of an acquire that passes no `timeout`, in ms (`Infinity`: none). */
  readonly acquireTimeout: number;
  /** The Redis runtime (undefined on another store). */
  readonly #rt: Runtime | undefined;
  readonly #engine: Runtime | NamedEngine;
  #endpoints: readonly Endpoint[] = [];
  /** The instance's one close state: every part of it reads this, and only it refuses work after close(). */
  readonly #shutdown = new Shutdown();
  /** The PostgreSQL store, for guards checked in the user's transaction. */
  #pg: PostgresStore | undefined;

  constructor(options: SurelockOptions) {
    if (options === undefined || options === null || typeof options !== "object") {
      throw new InvalidArgumentError("options", options, "an options object with one of `redis`, `postgres` or `etcd`");
    }
    const o = checkOptions<SurelockOptions>("options", options, OPTION_NAMES);
    const given = (["redis", "postgres", "etcd"] as const).filter((k) => o[k] !== undefined);
    if (given.length !== 1) {
      const argument = given.length === 0 ? "options.redis" : `options.${given[1]}`;
      throw new InvalidArgumentError(argument, given.length === 0 ? undefined : o[given[1]!],
        given.length === 0 ? "a Redis client or an array of them (or give `postgres` or `etcd`)" : `exactly one of redis, postgres and etcd (${given.join(" and ")} were given)`);
    }
    this.store = given[0]!;
    this.prefix = o.prefix === undefined ? "surelock" : checkPrefix("options.prefix", o.prefix);
    this.ttl = o.ttl === undefined ? 30_000 : checkTtl("options.ttl", o.ttl);
    this.acquireTimeout = o.acquireTimeout === undefined ? DEFAULT_ACQUIRE_TIMEOUT_MS : checkTimeout("options.acquireTimeout", o.acquireTimeout);
    if (this.store === "redis") {
      const rt = this.#redis(o);
      this.#rt = rt;
      this.#engine = rt;
    } else {
      this.#engine = this.#named(o, this.store);
    }
  }

  /** The named-store engine over PostgreSQL or etcd, refusing the options that only mean something on Redis. */
  #named(o: SurelockOptions, store: "postgres" | "etcd"): NamedEngine {
    const on = store === "postgres" ? "PostgreSQL" : "etcd";
    if (o.replicas !== undefined) {
      throw new InvalidArgumentError("options.replicas", o.replicas, `no replicas option on ${on}: only Redis waits for replicas (WAIT); ${on} replicates every write it acknowledges`);
    }
    if (o.counterRetention !== undefined) {
      throw new InvalidArgumentError("options.counterRetention", o.counterRetention, store === "postgres"
        ? "no counterRetention on PostgreSQL: a lock's fencing counter is a row that is never dropped"
        : "no counterRetention on etcd: fencing tokens are etcd's own revisions, which never go back");
    }
    if (store === "postgres" && o.clock !== undefined) {
      throw new InvalidArgumentError("options.clock", o.clock, "no clock on PostgreSQL: its leases are timed on the database's clock and this process's monotonic one");
    }
    const timeoutMs = o.commandTimeout === undefined ? 5_000 : checkPositiveInt("options.commandTimeout", o.commandTimeout, 600_000);
    const pollMs = o.pollInterval === undefined ? undefined : checkPositiveInt("options.pollInterval", o.pollInterval, 600_000);
    const clock = o.clock === undefined ? systemClock : checkClock(o.clock);
    const keys = new KeySpace(this.prefix);
    if (store === "postgres") {
      const given = o.postgres as unknown;
      const settings: Partial<PostgresOptions> = typeof (given as PostgresPool | null)?.connect === "function" ? { pool: given as PostgresPool }
        : checkOptions<PostgresOptions>("options.postgres", given, ["pool", "schema", "createSchema"]);
      if (typeof settings.pool?.connect !== "function") {
        throw new InvalidArgumentError("options.postgres", given, "a node-postgres Pool, or { pool, schema?, createSchema? }");
      }
      let pg: PostgresStore;
      // (kept for guard(): fences are checked in the user's transaction, not through the engine)
      try {
        pg = new PostgresStore({
          pool: settings.pool as PgPool, callTimeoutMs: timeoutMs, ...(pollMs === undefined ? {} : { pollMs }),
          ...(settings.schema === undefined ? {} : { schema: settings.schema }), ...(settings.createSchema === undefined ? {} : { createSchema: settings.createSchema }),
        });
      } catch (error) {
        throw renamed(error, "options.postgres");
      }
      this.#pg = pg;
      return new NamedEngine({
        shutdown: this.#shutdown, backend: new PostgresBackend(pg, this.ttl), clock, keys, namePrefix: `${this.prefix}/`, acquireTimeoutMs: this.acquireTimeout, callBoundMs: timeoutMs,
        pollMs: pollMs ?? 1_000,
      });
    }
    let etcd: EtcdStore;
    try {
      etcd = new EtcdStore({
        client: o.etcd, prefix: `${this.prefix}/`, sessionTtlMs: this.ttl, requestTimeoutMs: timeoutMs, clock, ...(pollMs === undefined ? {} : { recheckMs: pollMs }),
      });
    } catch (error) {
      throw renamed(error, "options.etcd");
    }
    // etcd's extend renews the session (a keep-alive) and checks the key: two requests at once.
    return new NamedEngine({
      shutdown: this.#shutdown, backend: new EtcdBackend(etcd, clock, pollMs ?? 1_000), clock, keys, namePrefix: "", acquireTimeoutMs: this.acquireTimeout, callBoundMs: timeoutMs * 2, pollMs: pollMs ?? 1_000,
    });
  }

  /** The Redis runtime: single-node or quorum mode, as today. */
  #redis(o: SurelockOptions): Runtime {
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
      ? new QuorumStore(this.#endpoints.map((e) => ({ store: new SingleStore(e, { ...policy, grants: false, ordered: true, countsIds: true }), timeoutMs: e.timeoutMs })), clock)
      : new SingleStore(this.#endpoints[0] as Endpoint, policy);
    // One call's own bound: its deadline (plus WAIT's), and in quorum mode the rounds it may ask again.
    const callMs = timeoutMs + (replicas?.timeoutMs ?? 0);
    const callBoundMs = quorum ? QUORUM_ROUNDS * (callMs + 3 * callMs) : callMs;
    return new Runtime({
      shutdown: this.#shutdown, store, clock, keys: new KeySpace(this.prefix), acquireTimeoutMs: this.acquireTimeout, pollMs, closeMs: timeoutMs, callBoundMs,
      // Quorum mode's attempt may ask again and waits for its votes to be treated: no lazy wait there.
      ...(quorum ? {} : { attemptBoundMs: callMs }),
    });
  }

  /** The Redis runtime, for what only Redis offers (elections, Redis guards); UnsupportedError elsewhere. */
  #redisOnly(what: string): Runtime {
    if (this.#rt) return this.#rt;
    throw new UnsupportedError(`${what} on ${this.store === "etcd" ? "etcd" : "PostgreSQL"} is not offered yet (see docs/api.md, Stores)`);
  }

  /** A lock's own `ttl`: on etcd every renewed hold lives under the instance's session lease instead. */
  #lockTtl(value: unknown): number {
    if (value === undefined) return this.ttl;
    const ttl = checkTtl("options.ttl", value);
    if (this.store === "etcd" && ttl !== this.ttl) {
      throw new InvalidArgumentError("options.ttl", value, `no ttl of its own on etcd: every renewed hold lives under the instance's session lease (the Surelock's ttl, ${this.ttl} ms); pass leaseTime for a fixed lease`);
    }
    return ttl;
  }

  /** A reentrant mutex on `key`. Cheap: create one per use or keep it, as you like. */
  mutex(key: string, options?: MutexOptions): Mutex {
    checkKey("key", key);
    const o = checkOptions<MutexOptions>("options", options, ["ttl", "fair"]);
    const ttl = this.#lockTtl(o.ttl);
    if (o.fair !== undefined) checkBoolean("options.fair", o.fair);
    this.#shutdown.assertOpen();
    return Mutex._create(this.#engine, key, ttl);
  }

  /**
   * A lock over several keys at once, taken and released as one (all or none), on the same keys as
   * `mutex(key)` of each. On a Redis Cluster the keys must share one slot (a common hash tag such
   * as `{order}:a`, `{order}:b`): checked here, before any I/O.
   */
  multiLock(keys: readonly string[], options?: MultiLockOptions): MultiLock {
    const checked = checkMultiKeys(this.#engine, keys, this.#endpoints.some((e) => e.adapter.cluster));
    const o = checkOptions<MultiLockOptions>("options", options, ["ttl"]);
    const ttl = this.#lockTtl(o.ttl);
    this.#shutdown.assertOpen();
    return MultiLock._create(this.#engine, checked, ttl);
  }

  /** A read-write lock on `key`: `read()` and `write()` are each used like a mutex. */
  readWriteLock(key: string, options?: ReadWriteLockOptions): ReadWriteLock {
    checkKey("key", key);
    const o = checkOptions<ReadWriteLockOptions>("options", options, ["ttl"]);
    const ttl = this.#lockTtl(o.ttl);
    this.#shutdown.assertOpen();
    return ReadWriteLock._create(this.#engine, key, ttl);
  }

  /**
   * A semaphore on `key` with `permits` permits, stored with it: every caller must agree, until
   * `setPermits()` changes the limit on purpose (then every caller follows the stored one; Redis only).
   */
  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    checkKey("key", key);
    if (options === undefined) throw new InvalidArgumentError("options.permits", undefined, "an integer from 1 to 1000000");
    const o = checkOptions<SemaphoreOptions>("options", options, ["permits", "ttl"]);
    const permits = checkPositiveInt("options.permits", o.permits, MAX_PERMITS);
    const ttl = this.#lockTtl(o.ttl);
    this.#shutdown.assertOpen();
    return Semaphore._create(this.#engine, key, ttl, permits);
  }

  /**
   * Leader election among the processes that campaign for `name` (etcd's election API): the
   * leader holds a lease; `leader()` and `observe()` tell everyone who it is. On etcd, its `ttl`
   * must be the Surelock's (the candidacy lives under the session lease).
   */
  election(name: string, options?: ElectionOptions): Election {
    checkKey("name", name);
    const o = checkOptions<ElectionOptions>("options", options, ["ttl"]);
    const ttl = this.#lockTtl(o.ttl);
    this.#shutdown.assertOpen();
    if (this.#engine instanceof NamedEngine) return Election._createOn(this.#engine, this.#engine.election(name), name, ttl);
    return Election._create(this.#redisOnly("election()"), name, ttl);
  }

  /**
   * A countdown latch on `name` that opens after `count` count downs (stored with it: every caller
   * must agree; on etcd each caller's own count decides when it is open).
   */
  latch(name: string, options: LatchOptions): CountDownLatch {
    checkKey("name", name);
    if (options === undefined) throw new InvalidArgumentError("options.count", undefined, "an integer from 1 to 1000000");
    const o = checkOptions<LatchOptions>("options", options, ["count", "ttl"]);
    const count = checkPositiveInt("options.count", o.count, 1_000_000);
    const ttl = o.ttl === undefined ? 3_600_000 : checkTtl("options.ttl", o.ttl);
    this.#shutdown.assertOpen();
    if (this.#engine instanceof NamedEngine) return CountDownLatch._createOn(this.#engine.latch(name, count, ttl), name, count, ttl);
    return CountDownLatch._create(this.#redisOnly("latch()"), name, count, ttl);
  }

  /** Shorthand for `mutex(key).withLock(work, options)`. */
  withLock<T>(key: string, work: LockedWork<T>, options?: WithLockOptions): Promise<T> {
    return this.mutex(key).withLock(work, options);
  }

  /**
   * A fencing guard for `resource`. On Redis: writes that are refused when a newer lock holder has
   * written already, each applied once (`write`); single-node mode only (in quorum mode, keep the
   * token next to your data). On PostgreSQL: `check(client, token)` inside your own transaction.
   * On etcd: `commit(lease, operations)`, an etcd transaction that goes through only while the
   * lease holds (it compares the holder key's creation revision, the lease's fencing token).
   */
  guard(resource: string): FencingGuard {
    checkKey("resource", resource);
    this.#shutdown.assertOpen();
    if (this.#pg) {
      const guard = this.#pg.guard(resource);
      return FencingGuard._createChecked((client, token) => guard.check(client as PgQueryable, token), this.#engine.keys, resource, this.#engine.ids);
    }
    if (this.store === "etcd") {
      const engine = this.#engine as NamedEngine;
      return FencingGuard._createCommitted(async (lease, operations) => {
        if (!(lease instanceof Lease)) throw new InvalidArgumentError("lease", lease, "a Lease of this Surelock (from acquire() or withLock())");
        const { written, responses } = await engine.fenced(lease, operations);
        return written ? { written, responses } : { written: false };
      }, engine.keys, resource, engine.ids);
    }
    const rt = this.#redisOnly("guard()");
    if (this.#endpoints.length !== 1) {
      throw new InvalidArgumentError("resource", resource, "a Surelock with a single Redis client (guards are not replicated in quorum mode)");
    }
    return FencingGuard._create(this.#endpoints[0] as Endpoint, rt.keys, resource, rt.ids);
  }

  /**
   * Ends every wait (pending acquires reject with ClosedError), gives back the leases still held
   * (their signals abort first) and closes the wake-up connections, each step bounded by the
   * command timeout. Never closes the clients (or the pool) you passed in, and leaves no listener
   * on them. Idempotent: a second call joins the first.
   */
  close(): Promise<void> {
    return this.#shutdown.close(() => this.#engine.shutDown().finally(() => {
      for (const endpoint of this.#endpoints) endpoint.adapter.detach?.();
    }));
  }
}

/** A store's InvalidArgumentError about its own option, named as the Surelock's option. */
function renamed(error: unknown, option: string): unknown {
  if (!(error instanceof InvalidArgumentError)) return error;
  // The store names its own option ("options.pool"): the caller gave `option`.
  const expected = error.message.replace(/^invalid [^:]*: expected /, "").replace(/, received [\s\S]*$/, "");
  return new InvalidArgumentError(`${option} (${error.argument})`, error.value, expected);
}

function checkClock(value: unknown): Clock {
  const c = value as Partial<Clock> | null;
  if (typeof c !== "object" || c === null || typeof c.now !== "function" || typeof c.setTimeout !== "function" || typeof c.clearTimeout !== "function") {
    throw new InvalidArgumentError("options.clock", value, "a clock with now(), setTimeout() and clearTimeout()");
  }
  return c as Clock;
}
