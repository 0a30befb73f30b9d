// Shared by the PostgreSQL store's tests: one server per file, a pool and a store per test.
import { after, before } from "node:test";
import pg from "pg";
import { PostgresStore, type PostgresStoreOptions } from "../../src/postgres/store.js";
import { startPostgres, type PostgresServer } from "../helpers/postgres-server.js";

export interface PgContext {
  server: PostgresServer;
  pools: pg.Pool[];
  stores: PostgresStore[];
  pool(options?: pg.PoolConfig): pg.Pool;
  store(options?: Partial<PostgresStoreOptions>, pool?: pg.Pool): PostgresStore;
}

/** Starts a server before the file's tests and stops it (and every pool and store made) after. */
export function postgresSuite(settings?: Record<string, string | number>): PgContext {
  const ctx: PgContext = {
    server: undefined as unknown as PostgresServer,
    pools: [],
    stores: [],
    pool(options = {}) {
      const p = new pg.Pool({ ...ctx.server.config, max: 8, ...options });
      p.on("error", () => {});
      ctx.pools.push(p);
      return p;
    },
    store(options = {}, pool) {
      const s = new PostgresStore({ pool: pool ?? ctx.pool(), ...options });
      ctx.stores.push(s);
      return s;
    },
  };
  before(async () => {
    ctx.server = await startPostgres(settings ? { settings } : {});
  });
  after(async () => {
    for (const s of ctx.stores) s.close();
    await Promise.all(ctx.pools.map((p) => p.end().catch(() => {})));
    await ctx.server?.stop();
  });
  return ctx;
}

let n = 0;
/** A fresh name per call, so tests of one file do not see each other's locks. */
export const fresh = (what = "k"): string => `${what}-${process.pid}-${++n}`;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits for a mutex the way the lock engine will: an attempt with a ticket, then a wake-up or the
 * poll bound, again; the ticket is refreshed by each attempt. Resolves with the grant.
 */
export async function acquireWaiting(
  store: PostgresStore,
  name: string,
  hold: string,
  ttlMs: number,
  mode: "x" | "r" | "w" = "x",
): Promise<{ token: bigint; validUntil: number }> {
  const watch = store.watch(name, hold);
  try {
    for (;;) {
      const r = await store.acquire({ names: [name], hold, owner: hold, mode, ttlMs, reentry: { kind: "fresh" }, ticketMs: 5_000 });
      if (r.status === "founded" || r.status === "entered") return { token: r.token, validUntil: r.validUntil };
      if (r.status !== "busy") throw new Error(`unexpected ${r.status}`);
      await watch.next(r.waitMs + 5);
    }
  } finally {
    watch.close();
  }
}
