// The PostgreSQL store beside surelock on Redis and beside a hand-rolled pg_advisory_lock floor.
//
//   npm run bench:postgres            uncontended and contended mutex cycles; prints a table and
//                                     writes bench/results/postgres.md
//   npm run bench:postgres -- --quick fewer cycles
//
// Per cycle (acquire then release): wall time, client CPU, server CPU (PostgreSQL: every process
// of its own server, from /proc; Redis: INFO cpu) and statements (commands for Redis). The floor
// holds a session advisory lock on a pooled connection: two statements, no TTL, no fencing token,
// no queue, and the lock dies with the connection. It is the line to measure against, not a lock
// to use. Contended: 8 workers on one name; the floor's workers block inside pg_advisory_lock.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import pg from "pg";
import { Surelock } from "../src/index.js";
import { PostgresStore } from "../src/postgres/store.js";
import { startPostgres, type PostgresServer } from "../test/helpers/postgres-server.js";
import { acquireWaiting } from "../test/postgres/support.js";
import { startStandalone } from "../test/helpers/redis-topology.js";

const quick = process.argv.includes("--quick");
const UNCONTENDED = quick ? 300 : 2_000;
const WORKERS = 8;
const PER_WORKER = quick ? 30 : 150;
const TICKS = 100; // /proc clock ticks per second (USER_HZ)

/** CPU seconds used so far by the server: the postmaster and every child of it. */
function serverCpu(server: PostgresServer): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    if (Number(entry) === server.pid || ppid === server.pid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS;
}

interface Row { system: string; workload: string; cycles: number; wallUs: number; clientUs: number; serverUs: number; statements: number }

async function measure(system: string, workload: string, cycles: number, serverCpuNow: () => Promise<number>, statementsNow: () => Promise<number>, work: () => Promise<void>): Promise<Row> {
  const [s0, q0] = [await serverCpuNow(), await statementsNow()];
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await work();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const [s1, q1] = [await serverCpuNow(), await statementsNow()];
  return {
    system, workload, cycles,
    wallUs: (wall * 1000) / cycles,
    clientUs: (c.user + c.system) / cycles,
    serverUs: ((s1 - s0) * 1e6) / cycles,
    statements: (q1 - q0) / cycles,
  };
}

async function main(): Promise<void> {
  const server = await startPostgres();
  const redisServer = await startStandalone();
  const rows: Row[] = [];
  try {
    const pool = new pg.Pool({ ...server.config, max: WORKERS + 2 });
    pool.on("error", () => {});
    const store = new PostgresStore({ pool, pollMs: 500 });
    await store.ready();
    await store.listening();
    const pgCpu = async () => serverCpu(server);

    // surelock on PostgreSQL.
    const pgStatements = async () => store.statements;
    rows.push(await measure("surelock (PostgreSQL)", "uncontended", UNCONTENDED, pgCpu, pgStatements, async () => {
      for (let i = 0; i < UNCONTENDED; i++) {
        const hold = `u${i}`;
        const r = await store.acquire({ names: ["bench-u"], hold, owner: hold, mode: "x", ttlMs: 10_000, reentry: { kind: "fresh" } });
        if (r.status !== "founded") throw new Error(`uncontended attempt ${r.status}`);
        await store.release(["bench-u"], hold);
      }
    }));
    rows.push(await measure("surelock (PostgreSQL)", `contended (${WORKERS} workers)`, WORKERS * PER_WORKER, pgCpu, pgStatements, async () => {
      await Promise.all(Array.from({ length: WORKERS }, async (_, w) => {
        for (let i = 0; i < PER_WORKER; i++) {
          const hold = `c${w}-${i}`;
          await acquireWaiting(store, "bench-c", hold, 10_000);
          await store.release(["bench-c"], hold);
        }
      }));
    }));

    // The floor: a session advisory lock on a pooled connection.
    let floorStatements = 0;
    const floor = async () => floorStatements;
    const cycle = async (key: number) => {
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [key]);
        await client.query("SELECT pg_advisory_unlock($1)", [key]);
        floorStatements += 2;
      } finally {
        client.release();
      }
    };
    rows.push(await measure("floor: pg_advisory_lock", "uncontended", UNCONTENDED, pgCpu, floor, async () => {
      for (let i = 0; i < UNCONTENDED; i++) await cycle(1);
    }));
    rows.push(await measure("floor: pg_advisory_lock", `contended (${WORKERS} workers)`, WORKERS * PER_WORKER, pgCpu, floor, async () => {
      await Promise.all(Array.from({ length: WORKERS }, async () => {
        for (let i = 0; i < PER_WORKER; i++) await cycle(2);
      }));
    }));
    store.close();
    await pool.end();

    // surelock on Redis, through its public API.
    const redis = new Redis({ port: redisServer.port });
    const locks = new Surelock({ redis });
    const info = new Redis({ port: redisServer.port });
    const section = async (name: string) => await info.info(name);
    const redisCpu = async () => {
      const cpu = await section("cpu");
      const field = (f: string) => Number(new RegExp(`^${f}:([\\d.]+)`, "m").exec(cpu)?.[1] ?? 0);
      return field("used_cpu_sys") + field("used_cpu_user");
    };
    // Commands the clients sent: INFO's own calls left out; a script's inner commands are counted
    // by INFO under their own names, so only EVALSHA/EVAL and the plain commands are added up.
    const inner = new Set(["hget", "hset", "hdel", "hmget", "hincrby", "pexpire", "pttl", "del", "exists", "zadd", "zrem", "zrange", "zcard", "zscore", "incr", "get", "set", "publish", "spublish", "hgetall", "hlen", "zrangebyscore", "zremrangebyscore", "time", "hexists", "expire", "rpush", "lpop", "llen", "lrange", "lrem", "type", "zcount", "hsetnx", "zincrby", "unlink"]);
    const redisCommands = async () => {
      const stats = await section("commandstats");
      let n = 0;
      for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== "info" && !inner.has(m[1]!)) n += Number(m[2]);
      return n;
    };
    rows.push(await measure("surelock (Redis)", "uncontended", UNCONTENDED, redisCpu, redisCommands, async () => {
      for (let i = 0; i < UNCONTENDED; i++) await (await locks.mutex("bench-u").acquire()).release();
    }));
    rows.push(await measure("surelock (Redis)", `contended (${WORKERS} workers)`, WORKERS * PER_WORKER, redisCpu, redisCommands, async () => {
      await Promise.all(Array.from({ length: WORKERS }, async () => {
        for (let i = 0; i < PER_WORKER; i++) await (await locks.mutex("bench-c").acquire()).release();
      }));
    }));
    await locks.close();
    redis.disconnect();
    info.disconnect();
  } finally {
    await server.stop();
    await redisServer.stop();
  }

  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const floorOf = (w: string) => rows.find((r) => r.system.startsWith("floor") && r.workload === w)!;
  const lines = [
    "| system | workload | wall µs/cycle | client CPU µs/cycle | server CPU µs/cycle | statements (commands)/cycle | server CPU × floor | statements × floor |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) => {
      const fl = floorOf(r.workload);
      return `| ${r.system} | ${r.workload} | ${f(r.wallUs)} | ${f(r.clientUs)} | ${f(r.serverUs)} | ${r.statements.toFixed(2)} | ${r.system.includes("Redis") ? "–" : (r.serverUs / fl.serverUs).toFixed(2)} | ${r.system.includes("Redis") ? "–" : (r.statements / fl.statements).toFixed(2)} |`;
    }),
  ];
  const out = [
    `PostgreSQL bench (${quick ? "quick" : "full"}): ${UNCONTENDED} uncontended cycles; ${WORKERS} workers × ${PER_WORKER} contended cycles; ${new Date().toISOString()}`,
    "",
    ...lines,
    "",
  ].join("\n");
  process.stdout.write(out);
  if (!quick) writeFileSync(new URL("./results/postgres.md", import.meta.url), out);
}

await main();
