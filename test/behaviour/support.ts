// The shared behaviour suite's stores: each starts its own real server (redis-server, an initdb'd
// PostgreSQL, a 3-member etcd cluster) on free loopback ports and makes Surelock instances over it.
import { Etcd3 } from "etcd3";
import { Redis } from "ioredis";
import pg from "pg";
import { Surelock, type SurelockOptions } from "../../src/index.js";
import { KeySpace } from "../../src/keys.js";
import { EtcdStore } from "../../src/etcd/store.js";
import { PostgresStore } from "../../src/postgres/store.js";
import { startEtcdCluster, type EtcdCluster } from "../helpers/etcd-cluster.js";
import { startPostgres, type PostgresServer } from "../helpers/postgres-server.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

/** Options every store accepts (the store's own option is added by the world). */
export type CommonOptions = Omit<SurelockOptions, "redis" | "postgres" | "etcd">;

export interface World {
  readonly store: "redis" | "postgres" | "etcd";
  start(): Promise<void>;
  /** A new Surelock on the store (its own client), closed by `stop()` if the test did not. */
  surelock(options?: CommonOptions): Surelock;
  /** The store's option alone (for construction tests). */
  option(): Pick<SurelockOptions, "redis" | "postgres" | "etcd">;
  /** An operator's force-release of a mutex's key, from outside the instance that holds it. */
  forceRelease(prefix: string, key: string): Promise<void>;
  /** The store's option with a client that cannot reach any server (a closed loopback port). */
  unreachable(): Pick<SurelockOptions, "redis" | "postgres" | "etcd">;
  /** Closes every Surelock made so far (after each test). */
  closeAll(): Promise<void>;
  stop(): Promise<void>;
}

/** Settings that keep every test short: leases of 3 s (renewed each second), a 200 ms poll. */
export const FAST: CommonOptions = { ttl: 3_000, pollInterval: 200, commandTimeout: 2_000 };

function tracker(): { instances: Surelock[]; closeAll(): Promise<void> } {
  const instances: Surelock[] = [];
  return {
    instances,
    async closeAll() {
      await Promise.all(instances.map((s) => s.close().catch(() => undefined)));
      instances.length = 0;
    },
  };
}

export function redisWorld(): World {
  let server: RedisServer;
  const clients: Redis[] = [];
  const t = tracker();
  const client = (): Redis => {
    const c = new Redis({ port: server.port, host: server.host, lazyConnect: false, maxRetriesPerRequest: 1 });
    c.on("error", () => {});
    clients.push(c);
    return c;
  };
  return {
    store: "redis",
    async start() { server = await startStandalone(); },
    surelock(options = {}) {
      const s = new Surelock({ ...FAST, ...options, redis: client() });
      t.instances.push(s);
      return s;
    },
    option: () => ({ redis: client() }),
    unreachable: () => {
      const c = new Redis({ port: 1, host: "127.0.0.1", maxRetriesPerRequest: 1, retryStrategy: () => 200 });
      c.on("error", () => {});
      clients.push(c);
      return { redis: c };
    },
    async forceRelease(prefix, key) {
      await server.command("DEL", new KeySpace(prefix).exclusive(key).lock);
    },
    closeAll: () => t.closeAll(),
    async stop() {
      await t.closeAll();
      for (const c of clients) c.disconnect();
      await server?.stop();
    },
  };
}

export function postgresWorld(): World {
  let server: PostgresServer;
  const pools: pg.Pool[] = [];
  const t = tracker();
  const pool = (): pg.Pool => {
    const p = new pg.Pool({ ...server.config, max: 6 });
    p.on("error", () => {});
    pools.push(p);
    return p;
  };
  return {
    store: "postgres",
    async start() { server = await startPostgres(); },
    surelock(options = {}) {
      const s = new Surelock({ ...FAST, ...options, postgres: pool() });
      t.instances.push(s);
      return s;
    },
    option: () => ({ postgres: pool() }),
    unreachable: () => {
      const p = new pg.Pool({ host: "127.0.0.1", port: 1, user: "postgres", database: "postgres", connectionTimeoutMillis: 500 });
      p.on("error", () => {});
      pools.push(p);
      return { postgres: p };
    },
    async forceRelease(prefix, key) {
      const store = new PostgresStore({ pool: pool() });
      try {
        await store.forceRelease(`${prefix}/x/${key}`);
      } finally {
        store.close();
      }
    },
    closeAll: () => t.closeAll(),
    async stop() {
      await t.closeAll();
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      await server?.stop();
    },
  };
}

export function etcdWorld(): World {
  let cluster: EtcdCluster;
  const clients: Etcd3[] = [];
  const t = tracker();
  const client = (): Etcd3 => {
    const c = new Etcd3({ hosts: cluster.hosts.map((h) => `http://${h}`), dialTimeout: 1_000 });
    clients.push(c);
    return c;
  };
  return {
    store: "etcd",
    async start() { cluster = await startEtcdCluster(); },
    surelock(options = {}) {
      const s = new Surelock({ ...FAST, ...options, etcd: client() });
      t.instances.push(s);
      return s;
    },
    option: () => ({ etcd: client() }),
    unreachable: () => {
      const c = new Etcd3({ hosts: "http://127.0.0.1:1", dialTimeout: 500 });
      clients.push(c);
      return { etcd: c };
    },
    async forceRelease(prefix, key) {
      const store = new EtcdStore({ client: client(), prefix: `${prefix}/` });
      try {
        await store.forceRelease(`x/${key}`);
      } finally {
        await store.close();
      }
    },
    closeAll: () => t.closeAll(),
    async stop() {
      await t.closeAll();
      for (const c of clients) c.close();
      await cluster?.stop();
    },
  };
}

let n = 0;
/** A key no other test of the run uses. */
export const fresh = (what = "k"): string => `${what}-${process.pid}-${++n}`;

/** Resolves with `p`, or rejects once `ms` passed: every await of the suite is bounded. */
export function within<T>(ms: number, p: Promise<T>, what = "the step"): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** Resolves with the signal's reason once it aborts (bounded by `within` at the call site). */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }));
}
