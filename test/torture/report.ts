/**
 * What a run prints: a verdict, a summary per checker, and for each violation a MINIMAL history —
 * the events of the locks and leases involved, and the faults, in a window around it.
 */
import type { HistoryEvent } from "./history.js";
import { lockOf, lockOfRedisKey, type Model } from "./checkers/model.js";
import type { Violation } from "./checkers/violation.js";

const BEFORE_MS = 1_500;
const AFTER_MS = 300;
const MAX_LINES = 45;

function line(e: HistoryEvent): string {
  const at = `${e.t.toFixed(1).padStart(9)} ms  ${e.w < 0 ? "nemesis " : `worker${e.w} `}`;
  switch (e.type) {
    case "invoke": return `${at}call ${e.call} ${e.op}${e.key ? ` ${e.prim}:${e.key}` : ""}${e.lease ? ` lease ${e.lease}` : ""}${e.args ? ` ${JSON.stringify(e.args)}` : ""}`;
    case "ok": return `${at}call ${e.call} ok${e.value !== undefined && e.value !== null ? ` -> ${String(e.value)}` : ""}`;
    case "fail": return `${at}call ${e.call} FAILED ${e.error.name}${e.error.reason ? `(${e.error.reason})` : ""}: ${e.error.message}`;
    case "lease": return `${at}LEASE ${e.lease} ${e.prim}:${e.key} token ${e.token} owner ${e.owner}${e.parent ? ` inside ${e.parent}` : ""}${e.late ? " (late job)" : ""}`;
    case "obs": return `${at}look at ${e.lease}: held=${e.held} aborted=${e.aborted} (${e.via})`;
    case "abort": return `${at}signal of ${e.lease} aborted (${e.reason})`;
    case "renew": return `${at}${e.automatic ? "watchdog renewed" : "extend confirmed"} ${e.key} token ${e.token} ttl ${e.ttl}`;
    case "end": return `${at}done with ${e.lease}`;
    case "guard": return `${at}guarded write ${e.writeId} token ${e.token} by ${e.lease}: ${e.outcome}`;
    case "counter": return `${at}counter ${e.key} by ${e.lease}: read ${e.read}, wrote ${e.wrote} (${e.outcome})`;
    case "signal": return `${at}caller's signal of ${e.call} aborted`;
    case "listener-leak": return `${at}call ${e.call} left ${e.count} listener(s)`;
    case "fault": return `${at}FAULT ${e.fault} ${e.phase} ${e.target}${e.detail ? ` ${JSON.stringify(e.detail)}` : ""}${e.dataLoss ? " (data loss)" : ""}`;
    case "leaks": return `${at}leaks ${JSON.stringify({ ...e.handles, ...e.listeners })}`;
    case "note": return `${at}${e.level === "error" ? "ERROR " : ""}${e.text}`;
  }
}

/** The events that explain one violation, oldest first, at most MAX_LINES. */
export function minimalHistory(model: Model, v: Violation): string[] {
  const leases = new Set(v.leases ?? []);
  for (const id of [...leases]) {
    // The parents too: a nested lease's story starts with its outer one.
    let p = model.leases.get(id)?.parent;
    for (let i = 0; p !== undefined && i < 5; i++) {
      leases.add(p);
      p = model.leases.get(p)?.parent;
    }
  }
  const lock = v.lock;
  const calls = new Set([...model.calls.values()].filter((c) => c.invoke.lease !== undefined && leases.has(c.invoke.lease)).map((c) => c.id));
  for (const id of leases) {
    const l = model.leases.get(id);
    if (l) calls.add(l.call);
  }
  const [from, to] = v.window ?? [model.endAt - 2_000, model.endAt];
  const first = Math.min(from - BEFORE_MS, ...[...leases].map((id) => model.leases.get(id)?.start ?? Infinity));
  const relevant = (e: HistoryEvent): boolean => {
    if (e.type === "fault") return e.phase !== "skip" && (e.phase !== "hit" || typeof e.detail?.key !== "string" || lockOfRedisKey(e.detail.key) === lock);
    if ("lease" in e && typeof e.lease === "string" && leases.has(e.lease)) return true;
    if ("call" in e && typeof e.call === "string" && calls.has(e.call)) return true;
    if (e.type === "lease" && lock !== undefined && lockOf(e.prim, e.key) === lock) return true;
    return false;
  };
  const picked = model.events.filter((e) => e.t >= first && e.t <= to + AFTER_MS && relevant(e));
  // Keep the beginning (how the leases came to be) and the end (the violation itself).
  if (picked.length <= MAX_LINES) return picked.map(line);
  const head = picked.slice(0, 10).map(line);
  const tail = picked.slice(-(MAX_LINES - 11)).map(line);
  return [...head, `   ... ${picked.length - head.length - tail.length} more events ...`, ...tail];
}

/** Counts per checker and severity. */
export function summarize(violations: readonly Violation[]): string[] {
  const counts = new Map<string, number>();
  for (const v of violations) counts.set(`${v.checker} [${v.severity}]`, (counts.get(`${v.checker} [${v.severity}]`) ?? 0) + 1);
  return [...counts].sort().map(([k, n]) => `  ${k}: ${n}`);
}
