// The PostgreSQL store beside surelock on Redis and beside a hand-rolled pg_advisory_lock floor.
//
//   npm run bench:postgres            uncontended and contended mutex cycles; prints a table and
//                                     writes bench/results/postgres.md
//   npm run bench:postgres -- --quick fewer cycles (nothing written)
//
// Per cycle (acquire then release): wall time, client CPU, server CPU (PostgreSQL: every process
// of its own server, from /proc; Redis: INFO cpu) and statements (commands for Redis: those the
// client sent, not those a script ran). The floor holds a session advisory lock on a pooled
// connection: two statements, no TTL, no fencing token, no queue, and the lock dies with the
// connection. It is the line to measure against, not a lock to use. Contended: 8 workers on one
// name; the floor's workers block inside pg_advisory_lock. The machine is shared, so the systems
// run in interleaved rounds (each round runs a slice of every case) and load hits them alike.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import pg from "pg";
import { Surelock } from "../src/index.js";
import { PostgresStore } from "../src/postgres/store.js";
import { startPostgres, type PostgresServer } from "../test/helpers/postgres-server.js";
import { startStandalone } from "../test/helpers/redis-topology.js";
import { acquireWaiting } from "../test/postgres/support.js";

const quick = process.argv.includes("--quick");
const ROUNDS = 5;
const UNCONTENDED = (quick ? 300 : 2_000) / ROUNDS;
const WORKERS = 8;
const PER_WORKER = (quick ? 30 : 150) / ROUNDS;
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
    if (Number(entry) === server.pid || Number(fields[1]) === server.pid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS;
}

interface Case {
  system: string;
  workload: string;
  /** Cycles per round. */
  cycles: number;
  serverCpu: () => Promise<number>;
  statements: () => Promise<number>;
  work: (round: number) => Promise<void>;
  total: { cycles: number; wallMs: number; clientUs: number; serverS: number; statements: number };
}

async function slice(c: Case, round: number): Promise<void> {
  const [s0, q0] = [await c.serverCpu(), await c.statements()];
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await c.work(round);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const [s1, q1] = [await c.serverCpu(), await c.statements()];
  c.total.cycles += c.cycles;
  c.total.wallMs += wall;
  c.total.clientUs += cpu.user + cpu.system;
  c.total.serverS += s1 - s0;
  c.total.statements += q1 - q0;
}

async function main(): Promise<void> {
  const server = await startPostgres();
  const redisServer = await startStandalone();
  const cases: Case[] = [];
  const add = (c: Omit<Case, "total">) => cases.push({ ...c, total: { cycles: 0, wallMs: 0, clientUs: 0, serverS: 0, statements: 0 } });
  const pool = new pg.Pool({ ...server.config, max: WORKERS + 2 });
  pool.on("error", () => {});
  const store = new PostgresStore({ pool, pollMs: 500 });
  const redis = new Redis({ port: redisServer.port });
  const locks = new Surelock({ redis });
  const info = new Redis({ port: redisServer.port });
  try {
    await store.ready();
    await store.listening();
    const pgCpu = async () => serverCpu(server);
    const contended = `contended (${WORKERS} workers)`;

    const pgStatements = async () => store.statements;
    add({
      system: "surelock (PostgreSQL)", workload: "uncontended", cycles: UNCONTENDED, serverCpu: pgCpu, statements: pgStatements,
      work: async (round) => {
        for (let i = 0; i < UNCONTENDED; i++) {
          const hold = `u${round}-${i}`;
          const r = await store.acquire({ names: ["bench-u"], hold, owner: hold, mode: "x", ttlMs: 10_000, reentry: { kind: "fresh" } });
          if (r.status !== "founded") throw new Error(`uncontended attempt ${r.status}`);
          await store.release(["bench-u"], hold);
        }
      },
    });
    add({
      system: "surelock (PostgreSQL)", workload: contended, cycles: WORKERS * PER_WORKER, serverCpu: pgCpu, statements: pgStatements,
      work: async (round) => {
        await Promise.all(Array.from({ length: WORKERS }, async (_, w) => {
          for (let i = 0; i < PER_WORKER; i++) {
            const hold = `c${round}-${w}-${i}`;
            await acquireWaiting(store, "bench-c", hold, 10_000);
            await store.release(["bench-c"], hold);
          }
        }));
      },
    });

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
    add({
      system: "floor: pg_advisory_lock", workload: "uncontended", cycles: UNCONTENDED, serverCpu: pgCpu, statements: floor,
      work: async () => {
        for (let i = 0; i < UNCONTENDED; i++) await cycle(1);
      },
    });
    add({
      system: "floor: pg_advisory_lock", workload: contended, cycles: WORKERS * PER_WORKER, serverCpu: pgCpu, statements: floor,
      work: async () => {
        await Promise.all(Array.from({ length: WORKERS }, async () => {
          for (let i = 0; i < PER_WORKER; i++) await cycle(2);
        }));
      },
    });

    const redisCpu = async () => {
      const cpu = await info.info("cpu");
      const field = (f: string) => Number(new RegExp(`^${f}:([\\d.]+)`, "m").exec(cpu)?.[1] ?? 0);
      return field("used_cpu_sys") + field("used_cpu_user");
    };
    // INFO commandstats counts a script's inner commands under their own names: count what a
    // client sends (scripts, and the plain commands surelock sends itself), not INFO.
    const sent = new Set(["evalsha", "eval", "script|load", "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "ping"]);
    const redisCommands = async () => {
      const stats = await info.info("commandstats");
      let n = 0;
      for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (sent.has(m[1]!)) n += Number(m[2]);
      return n;
    };
    add({
      system: "surelock (Redis)", workload: "uncontended", cycles: UNCONTENDED, serverCpu: redisCpu, statements: redisCommands,
      work: async () => {
        for (let i = 0; i < UNCONTENDED; i++) await (await locks.mutex("bench-u").acquire()).release();
      },
    });
    add({
      system: "surelock (Redis)", workload: contended, cycles: WORKERS * PER_WORKER, serverCpu: redisCpu, statements: redisCommands,
      work: async () => {
        await Promise.all(Array.from({ length: WORKERS }, async () => {
          for (let i = 0; i < PER_WORKER; i++) await (await locks.mutex("bench-c").acquire()).release();
        }));
      },
    });

    for (let round = 0; round < ROUNDS; round++) for (const c of cases) await slice(c, round);
  } finally {
    store.close();
    await pool.end();
    await locks.close();
    redis.disconnect();
    info.disconnect();
    await server.stop();
    await redisServer.stop();
  }

  const f = (n: number) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));
  const per = (c: Case) => ({
    wallUs: (c.total.wallMs * 1000) / c.total.cycles,
    clientUs: c.total.clientUs / c.total.cycles,
    serverUs: (c.total.serverS * 1e6) / c.total.cycles,
    statements: c.total.statements / c.total.cycles,
  });
  const floorOf = (w: string) => per(cases.find((c) => c.system.startsWith("floor") && c.workload === w)!);
  const ratio = (c: Case, a: number, b: number) => (c.system.includes("Redis") ? "–" : `${(a / b).toFixed(2)}×`);
  const lines = [
    "| system | workload | wall µs/cycle | client CPU µs/cycle | server CPU µs/cycle | statements (commands)/cycle | client CPU vs floor | server CPU vs floor | statements vs floor |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ...cases.map((c) => {
      const p = per(c);
      const fl = floorOf(c.workload);
      return `| ${c.system} | ${c.workload} | ${f(p.wallUs)} | ${f(p.clientUs)} | ${f(p.serverUs)} | ${p.statements.toFixed(2)} | ${ratio(c, p.clientUs, fl.clientUs)} | ${ratio(c, p.serverUs, fl.serverUs)} | ${ratio(c, p.statements, fl.statements)} |`;
    }),
  ];
  const out = [
    `PostgreSQL bench (${quick ? "quick" : "full"}): ${UNCONTENDED * ROUNDS} uncontended cycles; ${WORKERS} workers × ${PER_WORKER * ROUNDS} contended cycles;`,
    `${ROUNDS} interleaved rounds; ${new Date().toISOString()}; PostgreSQL from its own initdb (fsync off), Redis on loopback; a shared 2-core machine: compare ratios.`,
    "",
    ...lines,
    "",
  ].join("\n");
  process.stdout.write(out);
  if (!quick) writeFileSync(new URL("./results/postgres.md", import.meta.url), out);
}

await main();
