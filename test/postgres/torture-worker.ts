/**
 * A worker process of the PostgreSQL torture run (test/postgres/torture.ts): one Surelock on a pg
 * Pool of its own, every connection through this worker's TCP proxy, a few concurrent flows of
 * sections (mutexes, re-entries, fixed leases, write and read sides, a semaphore). A section that
 * guards a resource writes to its fenced register: `guard(resource).check(client, token)` and an
 * INSERT into the log, in one transaction of the worker's own. Every call, lease, look at a lease
 * and write goes to the orchestrator as history (test/torture/history.ts), stamped on the shared
 * monotonic clock, so the Redis torture's checkers read it.
 */
import pg from "pg";
import { FencedError, Surelock, type Lease } from "../../src/index.js";
import { errorInfo, type Prim } from "../torture/history.js";
import type { FromWorker } from "../torture/ipc.js";
import { deriveSeed, Rng } from "../torture/prng.js";
import { LeaseWatch, Recorder } from "../torture/recorder.js";

export interface PgWorkerConfig {
  readonly index: number;
  readonly seed: number;
  readonly host: string;
  /** The proxy's port: every connection of this worker goes through it. */
  readonly port: number;
  readonly user: string;
  readonly database: string;
  readonly flows: number;
  readonly ttl: number;
  readonly commandTimeout: number;
  readonly pollInterval: number;
  /** How long an acquisition may wait. */
  readonly acquireTimeout: number;
  /** Slack added to every call's bound (a loaded machine). */
  readonly slackMs: number;
  readonly origin: number;
}

export type PgToWorker = { readonly type: "go"; readonly config: PgWorkerConfig } | { readonly type: "stop" };

const send = (message: FromWorker): Promise<void> =>
  new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What a section does once it holds its lock. */
type Kind = "mutex" | "fixed" | "reentrant" | "write" | "read" | "sem";

async function run(config: PgWorkerConfig, stopped: () => boolean): Promise<void> {
  const rec = new Recorder(config.index, send);
  rec.start(config.origin);
  const watch = new LeaseWatch(rec);
  const pool = new pg.Pool({
    host: config.host, port: config.port, user: config.user, database: config.database, max: 8,
    // The worker's own transactions are bounded too: a blackholed connection must not hang a flow.
    connectionTimeoutMillis: 2_000, query_timeout: 3_000, application_name: `torture-w${config.index}`,
  });
  pool.on("error", () => {});
  // A terminated backend's error reaches an idle or checked-out client: once per connection.
  pool.on("connect", (client) => client.on("error", () => {}));
  const locks = new Surelock({
    postgres: pool, ttl: config.ttl, commandTimeout: config.commandTimeout, pollInterval: config.pollInterval,
    acquireTimeout: config.acquireTimeout,
  });
  // The pool's state every 5 s, in the history: a pool whose every client is checked out fails
  // every call with "no connection from the pool", which the checkers count as an outage.
  const poolStats = setInterval(() => {
    rec.emit({ type: "note", text: `pool: total ${pool.totalCount}, idle ${pool.idleCount}, waiting ${pool.waitingCount}` });
  }, 5_000);
  const bound = config.acquireTimeout + 2 * config.commandTimeout + config.slackMs;

  /** One fenced write: the guard's check and the log's INSERT in one transaction. */
  const fencedWrite = async (leaseId: string, lease: Lease, resource: string): Promise<void> => {
    if (!watch.observe(leaseId, "before-write")) return;
    const writeId = rec.writeId();
    const token = lease.fencingToken;
    let outcome: "written" | "refused" | "unknown" = "unknown";
    let client: pg.PoolClient | undefined;
    let broken = false;
    try {
      client = await pool.connect();
      await client.query("BEGIN");
      await locks.guard(resource).check(client, token);
      await client.query("INSERT INTO torture_log (resource, write_id, token) VALUES ($1, $2, $3)", [resource, writeId, token.toString()]);
      await client.query("COMMIT");
      outcome = "written";
    } catch (e) {
      if (e instanceof FencedError) outcome = "refused";
      else broken = true;
      if (client) await client.query("ROLLBACK").catch(() => { broken = true; });
    } finally {
      // A connection whose query timed out may still have one in flight: never hand it out again.
      client?.release(broken);
    }
    rec.emit({ type: "guard", lease: leaseId, resource, writeId, token: token.toString(), outcome });
    watch.observe(leaseId, "after-write");
  };

  /** The body of a section: looks, maybe a fenced write, a short hold. */
  const section = async (rng: Rng, call: string, lease: Lease, key: string, prim: Prim, parent: string | undefined, resource: string | undefined,
    inner?: (outer: string) => Promise<void>): Promise<void> => {
    const id = rec.leaseId();
    rec.emit({ type: "lease", call, lease: id, key, prim, token: lease.fencingToken.toString(), owner: lease.owner, instance: 0,
      ttl: config.ttl, ...(parent !== undefined && { parent }), ...(prim === "sem" && { permits: 2 }) });
    watch.add(id, lease);
    try {
      await sleep(rng.int(0, 30));
      if (resource !== undefined) await fencedWrite(id, lease, resource);
      if (inner) await inner(id);
      await sleep(rng.int(0, 20));
    } finally {
      watch.observe(id, "end");
      watch.remove(id);
      rec.emit({ type: "end", lease: id });
    }
  };

  /** A withLock call, recorded: invoke, then ok or fail. */
  const recorded = async (key: string, prim: Prim, args: Record<string, string | number | boolean>, body: (call: string) => Promise<void>): Promise<void> => {
    const call = rec.callId();
    rec.emit({ type: "invoke", call, op: "withLock", key, prim, boundMs: bound, args });
    try {
      await body(call);
      rec.emit({ type: "ok", call });
    } catch (e) {
      rec.emit({ type: "fail", call, error: errorInfo(e) });
    }
  };

  const flow = async (f: number): Promise<void> => {
    const rng = new Rng(deriveSeed(config.seed, "pg-worker", config.index, f));
    while (!stopped()) {
      const kind = rng.weighted<Kind>([["mutex", 35], ["fixed", 12], ["reentrant", 15], ["write", 14], ["read", 10], ["sem", 14]]);
      const key = rng.pick(["k0", "k1"]);
      if (kind === "mutex" || kind === "fixed") {
        const leaseTime = kind === "fixed" ? config.ttl : undefined;
        const options = leaseTime === undefined ? {} : { leaseTime };
        await recorded(key, "mutex", { leaseTime: leaseTime ?? 0 }, async (call) => {
          await locks.mutex(key).withLock(async (lease) => {
            await section(rng, call, lease, key, "mutex", undefined, `r-${key}`);
          }, options);
        });
      } else if (kind === "reentrant") {
        await recorded(key, "mutex", { reentrant: true }, async (outerCall) => {
          await locks.mutex(key).withLock(async (outer) => {
            await section(rng, outerCall, outer, key, "mutex", undefined, undefined, async (outerId) => {
              await recorded(key, "mutex", { nested: true }, async (innerCall) => {
                await locks.mutex(key).withLock(async (inner) => {
                  await section(rng, innerCall, inner, key, "mutex", outerId, `r-${key}`);
                });
              });
            });
          });
        });
      } else if (kind === "write" || kind === "read") {
        const side = locks.readWriteLock("doc");
        await recorded("doc", kind, {}, async (call) => {
          await (kind === "write" ? side.write() : side.read()).withLock(async (lease) => {
            await section(rng, call, lease, "doc", kind, undefined, kind === "write" ? "r-doc" : undefined);
          });
        });
      } else {
        await recorded("pool", "sem", {}, async (call) => {
          await locks.semaphore("pool", { permits: 2 }).withLock(async (lease) => {
            await section(rng, call, lease, "pool", "sem", undefined, undefined);
          });
        });
      }
      await sleep(rng.int(0, 15));
    }
  };

  await Promise.all(Array.from({ length: config.flows }, (_, f) => flow(f)));
  clearInterval(poolStats);
  const closing = rec.callId();
  rec.emit({ type: "invoke", call: closing, op: "close", boundMs: null, args: { instance: 0 } });
  await locks.close();
  rec.emit({ type: "ok", call: closing });
  await pool.end().catch(() => {});
  rec.stopTimer();
  await rec.flush();
}

if (process.send) {
  let stop = false;
  process.on("unhandledRejection", (e) => {
    void send({ type: "error", message: `unhandled rejection: ${String(e)}` });
  });
  process.on("message", (m: PgToWorker) => {
    if (m.type === "stop") stop = true;
    else if (m.type === "go") {
      run(m.config, () => stop)
        .then(() => send({ type: "done" }))
        .catch((e) => send({ type: "error", message: `worker ${m.config.index} failed: ${String(e)}` }))
        .finally(() => process.disconnect());
    }
  });
  void send({ type: "ready" });
}
