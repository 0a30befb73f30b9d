// The PostgreSQL store's torture run (issue 30): worker processes, each a Surelock on a pg Pool of
// its own reaching the server through a TCP proxy of its own, run sections on mutexes (some with a
// fixed leaseTime, some re-entered), a read-write lock and a semaphore, and write fenced registers
// through `guard(resource).check(client, token)` in their own transactions; a nemesis terminates
// backends (pg_terminate_backend), blackholes a worker's connections, SIGKILLs the server and starts
// it again on its data directory, stops a worker process (SIGSTOP) past its ttl, and stops one
// backend process (a stalled session).
//
//   node --import tsx test/postgres/torture.ts [--seconds 600] [--seed 1] [--workers 4] [--flows 3]
//     [--fault-every 3000] [--history run.jsonl]
//
// The history is the Redis torture's (test/torture/history.ts) and so are the checkers: believed
// holds never overlap (a lease is believed from its acquisition to its last look that saw it held
// and its signal not aborted), semaphores never have more believed holders than permits, the fenced
// registers' logs have tokens in commit order and every acknowledged write exactly once, calls
// settle within their bounds, locks change hands while waited for and nothing is faulted. Also:
// every failed call failed with a surelock error (a `code` ERR_SURELOCK_*). Exits 1 on a violation.
import { fork, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { monoMs, since } from "../torture/clock.js";
import { checkExclusion, checkPermits } from "../torture/checkers/exclusion.js";
import { checkCalls, checkWorkers } from "../torture/checkers/liveness.js";
import { buildModel } from "../torture/checkers/model.js";
import { checkProgress, progressFloor } from "../torture/checkers/progress.js";
import { checkFencedRegisters } from "../torture/checkers/resources.js";
import type { Violation } from "../torture/checkers/violation.js";
import type { FaultKind, HistoryEvent, Unstamped } from "../torture/history.js";
import type { FromWorker } from "../torture/ipc.js";
import { deriveSeed, Rng } from "../torture/prng.js";
import { startPostgres, type PostgresServer } from "../helpers/postgres-server.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import type { PgToWorker, PgWorkerConfig } from "./torture-worker.js";
import { parseArgs } from "node:util";

/** The nemesis's faults, by what they do to PostgreSQL and its clients. */
export const FAULTS = ["terminate", "blackhole", "restart", "stall-worker", "stall-backend"] as const;
export type PgFault = (typeof FAULTS)[number];

export interface TortureOptions {
  readonly seconds: number;
  readonly seed: number;
  readonly workers?: number;
  readonly flows?: number;
  /** Mean pause between faults, ms. */
  readonly faultEveryMs?: number;
  /** Where to write the history as JSONL (none: not written). */
  readonly historyFile?: string;
  readonly log?: (line: string) => void;
}

export interface TortureResult {
  readonly seed: number;
  readonly faults: Readonly<Record<PgFault, number>>;
  readonly sections: number;
  readonly calls: { readonly ok: number; readonly failed: Readonly<Record<string, number>> };
  readonly writes: { readonly written: number; readonly refused: number; readonly unknown: number; readonly inLog: number };
  readonly violations: readonly Violation[];
  /** Progress reports under Redis's grace (the lock's ttl) that the PostgreSQL ticket lifetime explains. */
  readonly ticketStalls: readonly Violation[];
  /** Reports the checkers classed as not failing the run (a broken assumption, acknowledged). */
  readonly notes: readonly Violation[];
}

const TTL = 1_500;
/**
 * How long a waiter's ticket stays in a PostgreSQL lock's queue without a refresh (src/postgres/
 * locks.ts: the lock's ttl, at least three poll bounds): the ttl here. A waiter whose attempt
 * failed while the server was down cannot take its ticket back, and the lock waits for it that
 * long after the server is back. `ticketStalls` reports what a grace of the ttl alone flags.
 */
const PG_TICKET_MS = TTL;
/**
 * A waiter that failed in a fault stopped refreshing its ticket up to one poll and one call bound
 * before the fault's end was recorded: its ticket can hold the line that much longer.
 */
const TICKET_REFRESH_MS = 250 + 1_000;
const WORKER_FILE = fileURLToPath(new URL("./torture-worker.ts", import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A promise bounded by `ms`: rejects with `what` after it. */
async function bounded<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

interface Worker {
  readonly index: number;
  readonly child: ChildProcess;
  readonly proxy: FaultProxy;
  done: Promise<void>;
}

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const log = options.log ?? (() => {});
  const workers = options.workers ?? 4;
  const flows = options.flows ?? 3;
  const faultEveryMs = options.faultEveryMs ?? 3_000;
  const rng = new Rng(deriveSeed(options.seed, "pg-nemesis"));
  const history: HistoryEvent[] = [];
  const origin = monoMs();
  const emit = (event: Unstamped): void => {
    history.push({ ...event, t: since(origin), w: -1 } as HistoryEvent);
  };
  const errors: { w: number; text: string }[] = [];
  const faults = Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<PgFault, number>;

  const server: PostgresServer = await startPostgres();
  const started: Worker[] = [];
  const paused = new Set<number>();
  try {
    await server.query("CREATE TABLE torture_log (seq bigserial PRIMARY KEY, resource text NOT NULL, write_id text NOT NULL, token bigint NOT NULL)");
    for (let i = 0; i < workers; i++) {
      const proxy = await startFaultProxy({ host: server.host, port: server.port });
      const child = fork(WORKER_FILE, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
      let ready!: () => void;
      const isReady = new Promise<void>((r) => { ready = r; });
      const done = new Promise<void>((resolve) => {
        child.on("message", (m: FromWorker) => {
          if (m.type === "ready") ready();
          else if (m.type === "events") history.push(...m.events);
          else if (m.type === "error") errors.push({ w: i, text: m.message });
          else if (m.type === "done") resolve();
        });
        child.once("exit", () => resolve());
      });
      started.push({ index: i, child, proxy, done });
      await bounded(`worker ${i} ready`, 30_000, isReady);
    }
    const stopAt = performance.now() + options.seconds * 1000;
    emit({ type: "note", text: `run: seed ${options.seed}, ${workers} workers x ${flows} flows, ttl ${TTL} ms, ${options.seconds} s` });
    for (const w of started) {
      const config: PgWorkerConfig = {
        index: w.index, seed: options.seed, host: w.proxy.host, port: w.proxy.port, user: server.config.user, database: server.config.database,
        flows, ttl: TTL, commandTimeout: 1_000, pollInterval: 250, acquireTimeout: 10_000, slackMs: 3_000, origin,
      };
      w.child.send({ type: "go", config } satisfies PgToWorker);
    }

    const fault = (kind: FaultKind, phase: "start" | "end", target: string, detail?: Record<string, string | number | boolean | null>): void =>
      emit({ type: "fault", fault: kind, phase, target, ...(detail && { detail }) });

    // Every kind once in the first rounds (in a seeded order), then at random.
    const order = [...FAULTS].sort(() => rng.next() - 0.5);
    for (let round = 0; performance.now() < stopAt - 4_000; round++) {
      await sleep(faultEveryMs / 2 + rng.next() * faultEveryMs);
      if (performance.now() >= stopAt - 4_000) break;
      const kind = round < order.length ? order[round]! : rng.pick(FAULTS);
      const w = started[rng.int(0, started.length - 1)]!;
      faults[kind]++;
      if (kind === "terminate") {
        // One worker's backends, or every client backend.
        const all = rng.chance(0.4);
        const target = all ? "postgres" : `worker${w.index}`;
        fault("reset", "start", target, { how: "pg_terminate_backend" });
        const r = await server.query<{ n: string }>(
          `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'${all ? "" : " AND application_name = $1"}`,
          all ? [] : [`torture-w${w.index}`]).catch(() => ({ rows: [{ n: "?" }] }));
        log(`nemesis: terminated ${r.rows[0]?.n} backends of ${target}`);
      } else if (kind === "blackhole") {
        const ms = rng.int(500, 2 * TTL);
        fault("blackhole", "start", `worker${w.index}`, { heal: "reset", ms });
        log(`nemesis: blackhole worker ${w.index} for ${ms} ms`);
        w.proxy.blackhole();
        await sleep(ms);
        // A stream that lost bytes is corrupt: the partition ends with its connections reset.
        w.proxy.heal("reset");
        fault("blackhole", "end", `worker${w.index}`, { heal: "reset" });
      } else if (kind === "restart") {
        const ms = rng.int(200, TTL);
        fault("kill-node", "start", "postgres", { signal: "SIGKILL", downMs: ms });
        log(`nemesis: SIGKILL the server, down for ${ms} ms`);
        await server.kill();
        await sleep(ms);
        await server.restart();
        fault("kill-node", "end", "postgres");
        log("nemesis: server back");
      } else if (kind === "stall-worker") {
        const pid = w.child.pid;
        // Longer than the ttl: the worker's leases run out while it is stopped.
        const ms = rng.int(TTL + 200, 2 * TTL);
        if (pid === undefined || w.child.exitCode !== null) continue;
        fault("pause-worker", "start", `worker${w.index}`, { ms });
        log(`nemesis: SIGSTOP worker ${w.index} for ${ms} ms`);
        paused.add(pid);
        process.kill(pid, "SIGSTOP");
        await sleep(ms);
        try { process.kill(pid, "SIGCONT"); } catch { /* it exited */ }
        paused.delete(pid);
        fault("pause-worker", "end", `worker${w.index}`);
      } else {
        // A session stalled: one of a worker's backends stopped (it may hold row locks of the lock
        // tables, so others wait behind it), then let go.
        const r = await server.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend' ORDER BY random() LIMIT 1",
          [`torture-w${w.index}`]).catch(() => ({ rows: [] as { pid: number }[] }));
        const pid = r.rows[0]?.pid;
        if (pid === undefined) {
          fault("pause-node", "start", `backend of worker${w.index}`, { found: false });
          fault("pause-node", "end", `backend of worker${w.index}`);
          continue;
        }
        const ms = rng.int(300, TTL);
        fault("pause-node", "start", `backend ${pid} of worker${w.index}`, { ms });
        log(`nemesis: SIGSTOP backend ${pid} of worker ${w.index} for ${ms} ms`);
        paused.add(pid);
        try { process.kill(pid, "SIGSTOP"); } catch { /* it ended */ }
        await sleep(ms);
        try { process.kill(pid, "SIGCONT"); } catch { /* it ended */ }
        paused.delete(pid);
        fault("pause-node", "end", `backend ${pid} of worker${w.index}`);
      }
    }
    while (performance.now() < stopAt) await sleep(Math.min(500, stopAt - performance.now()));
    emit({ type: "note", text: "workers stop" });
    for (const w of started) if (w.child.connected) w.child.send({ type: "stop" } satisfies PgToWorker);
    await bounded("workers done", 60_000, Promise.all(started.map((w) => w.done)));
    emit({ type: "note", text: "workers done" });

    const rows = (await server.query<{ resource: string; write_id: string; token: string }>("SELECT resource, write_id, token FROM torture_log ORDER BY seq")).rows;
    const logs = new Map<string, string[]>();
    for (const r of rows) logs.set(r.resource, [...(logs.get(r.resource) ?? []), `${r.write_id}:${r.token}`]);
    for (const e of errors) history.push({ type: "note", text: e.text, level: "error", t: since(origin), w: e.w });
    if (options.historyFile) writeFileSync(options.historyFile, history.map((e) => JSON.stringify(e)).join("\n") + "\n");

    const model = buildModel(history);
    const all: Violation[] = [
      ...checkExclusion(model), ...checkPermits(model), ...checkFencedRegisters(model, logs), ...checkCalls(model),
      ...checkProgress(model, { ...progressFloor(model), graceMs: TTL + PG_TICKET_MS + TICKET_REFRESH_MS }), ...checkWorkers(model),
    ];
    const ticketStalls = checkProgress(model);
    const failed: Record<string, number> = {};
    let ok = 0;
    for (const c of model.calls.values()) {
      if (c.invoke.op === "close") continue;
      if (c.outcome === "ok") ok++;
      if (c.outcome !== "fail" || !c.error) continue;
      const name = `${c.error.name}${c.error.reason ? `(${c.error.reason})` : ""}`;
      failed[name] = (failed[name] ?? 0) + 1;
      // Every failure a typed error: a surelock error says what happened by its code.
      if (!c.error.code?.startsWith("ERR_SURELOCK_")) {
        all.push({ checker: "wrong-answer", severity: "violation", window: [c.invoke.t, c.doneAt ?? model.endAt],
          message: `call ${c.id} (${c.invoke.op} of ${c.invoke.prim}:${c.invoke.key}) failed with an untyped error: ${c.error.name}: ${c.error.message}` });
      }
    }
    const guards = model.guards;
    return {
      seed: options.seed, faults,
      sections: [...model.leases.values()].filter((l) => l.end !== undefined).length,
      calls: { ok, failed },
      writes: {
        written: guards.filter((g) => g.outcome === "written").length,
        refused: guards.filter((g) => g.outcome === "refused").length,
        unknown: guards.filter((g) => g.outcome === "unknown").length,
        inLog: rows.length,
      },
      violations: all.filter((v) => v.severity === "violation"), ticketStalls,
      notes: all.filter((v) => v.severity !== "violation"),
    };
  } finally {
    for (const pid of paused) try { process.kill(pid, "SIGCONT"); } catch { /* gone */ }
    for (const w of started) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    await Promise.all(started.map((w) => w.proxy.close().catch(() => {})));
    await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const number = (fallback: number) => ({ type: "string", default: String(fallback) }) as const;
  const { values: o } = parseArgs({
    options: { seconds: number(60), seed: number(1), workers: number(4), flows: number(3), "fault-every": number(3_000), history: { type: "string" } },
  });
  const at = performance.now();
  const stamp = (line: string): void => console.log(`${((performance.now() - at) / 1000).toFixed(1)}s ${line}`);
  const result = await runTorture({
    seconds: Number(o.seconds), seed: Number(o.seed), workers: Number(o.workers), flows: Number(o.flows), faultEveryMs: Number(o["fault-every"]),
    log: stamp, ...(o.history !== undefined && { historyFile: o.history }),
  });
  const { violations, notes, ticketStalls, ...figures } = result;
  console.log(JSON.stringify(figures, null, 2));
  for (const n of ticketStalls) console.log(`TICKET STALL (known, see PG_TICKET_MS) ${n.message}`);
  for (const n of notes.slice(0, 10)) console.log(`NOTE (${n.severity}) ${n.checker}: ${n.message}`);
  for (const v of violations.slice(0, 20)) console.error(`VIOLATION ${v.checker}: ${v.message}`);
  console.log(violations.length === 0 ? "OK: no violation" : `${violations.length} violations`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
