/**
 * One torture run: start a deployment behind fault proxies, fork the workers, check that they
 * share the orchestrator's clock, run the seeded operations and the seeded nemesis for the asked
 * time, heal, let the workers close, sweep Redis, check the history. The history is written to a
 * temp dir and kept only when the run fails (or when asked).
 */
import { fork, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { checkHistory, type EndState } from "./checkers/index.js";
import { buildModel } from "./checkers/model.js";
import { lookbackMs, type Pattern, type Violation } from "./checkers/violation.js";
import { monoMs, since } from "./clock.js";
import { startDeployment } from "./deployment.js";
import { guardLog, guardResource } from "./executor.js";
import type { HistoryEvent, Unstamped } from "./history.js";
import type { FromWorker, ToWorker, WorkerConfig } from "./ipc.js";
import { Nemesis, planFaults, planWakeupFaults } from "./nemesis.js";
import type { DeploymentKind } from "./plan.js";
import { deriveSeed, Rng } from "./prng.js";
import { minimalHistory, summarize } from "./report.js";
import { readResources, sweep } from "./sweep.js";

export interface TortureOptions {
  readonly seed: number;
  readonly minutes: number;
  readonly deployment: DeploymentKind;
  readonly workers: number;
  readonly keys: number;
  /** Concurrent flows per worker. */
  readonly flows: number;
  /** Quorum mode: number of nodes. */
  readonly quorumNodes: number;
  /** Keep the history even when the run passes. */
  readonly keepHistory: boolean;
  /** Where progress and the verdict go (one line per call). */
  readonly log: (line: string) => void;
  /** Print at most this many minimal histories. */
  readonly detailed: number;
}

export interface RunResult {
  readonly seed: number;
  readonly deployment: DeploymentKind;
  readonly passed: boolean;
  readonly violations: readonly Violation[];
  /** Violations (protocol only) per pattern: which known failure each looks like. */
  readonly patterns: Readonly<Partial<Record<Pattern, number>>>;
  readonly historyPath: string | undefined;
  readonly seconds: { readonly setup: number; readonly run: number; readonly drain: number; readonly check: number; readonly total: number };
  readonly counts: { readonly events: number; readonly leases: number; readonly calls: number; readonly faults: number };
}

/** Beyond its own timeout, a call may take a few command timeouts (retries, undo) plus this. */
export const SLACK_MS = 1_500;
const WORKER_FILE = fileURLToPath(new URL("./worker.ts", import.meta.url));

interface WorkerHandle {
  readonly index: number;
  readonly child: ChildProcess;
  /** Resolves when the worker exited: true if it reported done first. */
  readonly done: Promise<boolean>;
  /** Tells it to stop; it is killed if it has not exited 60 s later. */
  stop(): void;
}

export function commandTimeoutFor(kind: DeploymentKind): number {
  return kind === "quorum" ? 300 : 1_000;
}

/** How long any call may take beyond its own wait: retries, undo, WAIT for replicas, a loaded machine. */
export function slackFor(kind: DeploymentKind): number {
  return kind === "quorum" ? commandTimeoutFor(kind) * 9 + SLACK_MS : commandTimeoutFor(kind) * 2 + 200 + SLACK_MS;
}

export async function runTorture(o: TortureOptions): Promise<RunResult> {
  const t0 = monoMs();
  const dir = mkdtempSync(path.join(os.tmpdir(), "surelock-torture-"));
  const historyPath = path.join(dir, "history.jsonl");
  const file = createWriteStream(historyPath);
  const history: HistoryEvent[] = [];
  let origin = monoMs();
  const record = (e: HistoryEvent): void => {
    history.push(e);
    file.write(`${JSON.stringify(e)}\n`);
  };
  const emit = (e: Unstamped): void => record({ ...e, t: since(origin), w: -1 } as HistoryEvent);
  const log = o.log;
  const durationMs = Math.round(o.minutes * 60_000);

  const deployment = await startDeployment({ kind: o.deployment, quorumNodes: o.quorumNodes, rng: new Rng(deriveSeed(o.seed, "deployment")) });
  const workers: WorkerHandle[] = [];
  let nemesis: Nemesis | undefined;
  try {
    log(`surelock torture: seed ${o.seed}, ${o.deployment} (${deployment.describe()}), ${o.workers} workers × ${o.flows} flows, ` +
      `${o.keys} keys per kind, ${o.minutes} min`);
    emit({ type: "note", text: `servers: ${[...deployment.nodes, ...deployment.others].map((n) =>
      `${n.name} port ${n.server.port} pid ${n.server.pid} via proxy ${n.proxy.port}`).join("; ")}` });
    const commandTimeoutMs = commandTimeoutFor(o.deployment);
    const slackMs = slackFor(o.deployment);
    for (let index = 0; index < o.workers; index++) {
      const config: WorkerConfig = {
        index, seed: o.seed, deployment: o.deployment, spec: deployment.spec, keys: o.keys, flows: o.flows,
        // Half the workers have ioredis resend what a reset connection left unanswered, half not.
        autoResend: (index + o.seed) % 2 === 0, commandTimeoutMs, slackMs,
      };
      workers.push(startWorker(config, record, emit));
    }
    await Promise.all(workers.map((w) => expect(w.child, "ready", 60_000, `worker ${w.index} to connect`)));
    log(await checkClock(workers));

    const scope = { deployment: o.deployment, nodes: deployment.nodes.length, workers: o.workers, durationMs, maxTtlMs: 1_500 };
    const schedule = [...planFaults(new Rng(deriveSeed(o.seed, "nemesis")), scope),
      ...planWakeupFaults(new Rng(deriveSeed(o.seed, "nemesis", "wakeups")), scope)].sort((a, b) => a.at - b.at);
    origin = monoMs() + 100;
    const setupS = (origin - t0) / 1000;
    emit({ type: "note", text: `run starts: ${schedule.length} faults planned` });
    for (const w of workers) send(w.child, { type: "go", origin, stopAt: origin + durationMs });
    nemesis = new Nemesis({ deployment, workerPids: workers.map((w) => w.child.pid ?? -1), emit, now: monoMs });
    nemesis.start(schedule, origin);

    const progress = setInterval(() => {
      const leases = history.filter((e) => e.type === "lease").length;
      log(`  ${Math.round(since(origin) / 1000)} s of ${Math.round(durationMs / 1000)}: ${history.length} events, ${leases} leases`);
    }, Math.max(15_000, durationMs / 4));
    await new Promise((r) => setTimeout(r, Math.max(0, origin + durationMs - monoMs())));
    clearInterval(progress);

    await nemesis.heal();
    emit({ type: "note", text: "nemesis healed every fault; workers stop" });
    const runS = (monoMs() - origin) / 1000;
    for (const w of workers) w.stop();
    const finished = await Promise.all(workers.map((w) => w.done));
    const drainStart = monoMs();
    finished.forEach((ok, i) => {
      if (!ok) emit({ type: "note", level: "error", text: `worker ${i} did not finish cleanly within 60 s of the stop` });
    });
    emit({ type: "note", text: "workers closed; sweeping Redis" });
    // Every lock must be free within the longest ttl in use, plus the longest a ticket may live.
    const swept = await sweep(deployment, lookbackMs(buildModel(history)) + 3_000 + SLACK_MS);
    const resources = touchedResources(history);
    const end = await readResources(deployment, resources.logs, resources.counters);
    emit({ type: "note", text: `locks free ${swept.drainedAfterMs ?? "NOT"} ms after the workers closed` });
    const drainS = (monoMs() - drainStart) / 1000;

    const checkStart = monoMs();
    const endState = { ...end, sweep: swept };
    writeFileSync(path.join(dir, "end-state.json"), JSON.stringify(saveEndState(endState, o)));
    const { model, violations } = checkHistory(history, endState);
    const checkS = (monoMs() - checkStart) / 1000;
    const failures = violations.filter((v) => v.severity === "violation");
    const patterns: Partial<Record<Pattern, number>> = {};
    for (const v of failures) for (const p of v.patterns ?? []) patterns[p] = (patterns[p] ?? 0) + 1;
    const passed = failures.length === 0;

    log(`faults: ${Object.entries(nemesis.counts).map(([k, n]) => `${k} ${n}`).join(", ") || "none"}; ` +
      `cuts that hit: ${model.cuts.length}`);
    log(`history: ${history.length} events, ${model.leases.size} leases, ${model.calls.size} calls; ` +
      `locks free ${swept.drainedAfterMs ?? "NOT"} ms after the workers closed`);
    // How starved the workers were: a call's bound does not count these spans (checkers/model.ts).
    const stalled = [...model.stalls].sort(([a], [b]) => a - b)
      .map(([w, spans]) => `worker${w} ${spans.length} for ${(spans.reduce((ms, s) => ms + s.to - s.from, 0) / 1000).toFixed(1)} s`);
    if (stalled.length > 0) log(`event-loop stalls over 60 ms: ${stalled.join(", ")}`);
    if (violations.length > 0) log(`checkers:\n${summarize(violations).join("\n")}`);
    await new Promise<void>((r) => file.end(r));
    const keep = !passed || o.keepHistory;
    const totalS = (monoMs() - t0) / 1000;
    log(`timings: setup ${setupS.toFixed(1)} s, run ${runS.toFixed(1)} s, drain ${drainS.toFixed(1)} s, ` +
      `check ${checkS.toFixed(1)} s, total ${totalS.toFixed(1)} s`);
    if (passed) {
      log(`VERDICT: PASS (seed ${o.seed}, ${o.deployment})`);
    } else {
      log(`VERDICT: FAIL (seed ${o.seed}, ${o.deployment}): ${failures.length} protocol violation(s)` +
        (Object.keys(patterns).length > 0 ? ` [${Object.entries(patterns).map(([p, n]) => `${p}: ${n}`).join(", ")}]` : ""));
      printDetails(failures, o.detailed, (v) => minimalHistory(model, v), log);
    }
    if (keep) log(`history: ${historyPath} (check it again: node --import tsx test/torture/recheck.ts ${dir})`);
    else rmSync(dir, { recursive: true, force: true });
    if (!passed) {
      log(`reproduce: npm run torture -- --seed ${o.seed} --minutes ${o.minutes} --deployment ${o.deployment} ` +
        `--workers ${o.workers} --keys ${o.keys}${o.deployment === "quorum" ? ` --nodes ${o.quorumNodes}` : ""}`);
    }
    return {
      seed: o.seed, deployment: o.deployment, passed, violations, patterns, historyPath: keep ? historyPath : undefined,
      seconds: { setup: setupS, run: runS, drain: drainS, check: checkS, total: totalS },
      counts: { events: history.length, leases: model.leases.size, calls: model.calls.size, faults: model.faults.length },
    };
  } finally {
    await nemesis?.heal();
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    await deployment.stop();
  }
}

/** What recheck.ts needs besides the history to run the checkers again. */
export interface SavedRun {
  readonly options: { readonly seed: number; readonly deployment: DeploymentKind; readonly minutes: number };
  readonly logs: [string, readonly string[] | null][];
  readonly counters: [string, number | null][];
  readonly sweep: EndState["sweep"];
}

function saveEndState(end: EndState, o: TortureOptions): SavedRun {
  return {
    options: { seed: o.seed, deployment: o.deployment, minutes: o.minutes },
    logs: [...end.logs], counters: [...end.counters], sweep: end.sweep,
  };
}

function touchedResources(history: readonly HistoryEvent[]): { logs: [string, string][]; counters: string[] } {
  const logs = new Map<string, string>();
  const counters = new Set<string>();
  for (const e of history) {
    if (e.type === "guard") logs.set(e.resource, guardLog(e.resource.slice(guardResource("").length)));
    if (e.type === "counter") counters.add(e.key);
  }
  return { logs: [...logs], counters: [...counters] };
}

function printDetails(failures: readonly Violation[], max: number, details: (v: Violation) => string[], log: (line: string) => void): void {
  // One of each kind first: the report should show every different failure, not ten of one.
  const seen = new Set<string>();
  const first = failures.filter((v) => {
    const kind = `${v.checker}:${(v.patterns ?? []).join(",")}`;
    if (seen.has(kind)) return false;
    seen.add(kind);
    return true;
  });
  const shown = [...first, ...failures.filter((v) => !first.includes(v))].slice(0, max);
  shown.forEach((v, i) => {
    log(`\n[${i + 1}/${failures.length}] ${v.checker}${v.lock ? ` ${v.lock}` : ""}${v.patterns ? ` (looks like: ${v.patterns.join(", ")})` : ""}`);
    log(`  ${v.message}`);
    const lines = details(v);
    if (lines.length > 0) log(`  minimal history:\n${lines.map((l) => `    ${l}`).join("\n")}`);
  });
  const rest = failures.filter((v) => !shown.includes(v));
  for (const v of rest.slice(0, 20)) log(`  also: ${v.checker}${v.lock ? ` ${v.lock}` : ""}: ${v.message.slice(0, 200)}`);
  if (rest.length > 20) log(`  ... and ${rest.length - 20} more`);
}

function send(child: ChildProcess, message: ToWorker): void {
  if (child.connected) child.send(message);
}

function startWorker(config: WorkerConfig, record: (e: HistoryEvent) => void, emit: (e: Unstamped) => void): WorkerHandle {
  const child = fork(WORKER_FILE, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let finished = false;
  child.on("message", (m: FromWorker) => {
    if (m.type === "events") for (const e of m.events) record(e);
    else if (m.type === "error") emit({ type: "note", level: "error", text: `worker ${config.index}: ${m.message}` });
    else if (m.type === "done") finished = true;
  });
  let killTimer: NodeJS.Timeout | undefined;
  const done = new Promise<boolean>((resolve) => {
    child.once("exit", () => {
      clearTimeout(killTimer);
      resolve(finished);
    });
  });
  send(child, { type: "config", config });
  return {
    index: config.index, child, done,
    stop() {
      // A worker may have finished (at its stop time) before the nemesis healed: nothing to stop.
      if (child.exitCode !== null || child.signalCode !== null) return;
      send(child, { type: "stop" });
      // The child keeps the process alive while it runs; the timer need not.
      killTimer ??= setTimeout(() => child.kill("SIGKILL"), 60_000).unref();
    },
  };
}

function expect(child: ChildProcess, type: FromWorker["type"], ms: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    const onMessage = (m: FromWorker): void => {
      if (m.type === type) {
        cleanup();
        resolve();
      } else if (m.type === "error") {
        cleanup();
        reject(new Error(`${what}: ${m.message}`));
      }
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`${what}: the worker exited`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}

/**
 * Pings every worker a few times: each reply's stamp must fall between the ping's send and its
 * receipt on the orchestrator's clock, which holds only if all processes read one clock.
 */
async function checkClock(workers: readonly WorkerHandle[]): Promise<string> {
  let worst = 0;
  for (const w of workers) {
    for (let id = 0; id < 5; id++) {
      const sent = monoMs();
      const at = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`worker ${w.index} did not answer a clock ping`)), 5_000);
        const onMessage = (m: FromWorker): void => {
          if (m.type === "pong" && m.id === id) {
            clearTimeout(timer);
            w.child.off("message", onMessage);
            resolve(m.at);
          }
        };
        w.child.on("message", onMessage);
        send(w.child, { type: "ping", id });
      });
      const received = monoMs();
      if (at < sent || at > received) {
        throw new Error(`worker ${w.index}'s clock disagrees: it stamped ${at.toFixed(3)} for a ping sent at ${sent.toFixed(3)} and answered at ${received.toFixed(3)}`);
      }
      worst = Math.max(worst, received - sent);
    }
  }
  return `clock: ${workers.length} workers share CLOCK_MONOTONIC with the orchestrator (every ping's reply stamped ` +
    `between its send and its receipt; worst round trip ${worst.toFixed(2)} ms)`;
}
