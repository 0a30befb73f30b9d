/**
 * What a run prints: a verdict, a summary per checker, and for each violation a MINIMAL history —
 * the events of the locks and leases involved, and the faults, in a window around it.
 */
import type { HistoryEvent } from "./history.js";
import { lockOf, lockOfRedisKey, type Model } from "./checkers/model.js";
import type { Violation } from "./checkers/violation.js";

const BEFORE_MS = 1_500;
const AFTER_MS = 300;
const MAX_LINES = 60;
/** The violation's window, and this much before it, is always shown whole. */
const CORE_BEFORE_MS = 200;

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
    case "forced-close": return `${at}FORCED CLOSE: ${e.open} call(s) still open long after the stop`;
    case "stall": return `${at}event loop ran nothing for ${(e.t - e.from).toFixed(0)} ms`;
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
  // And what was nested in them: their extends and releases act on the same hold.
  for (let grew = true; grew;) {
    grew = false;
    for (const l of model.leases.values()) {
      if (l.parent !== undefined && leases.has(l.parent) && !leases.has(l.id)) {
        leases.add(l.id);
        grew = true;
      }
    }
  }
  const holds = new Set([...leases].map((id) => model.leases.get(id)).filter((l) => l !== undefined)
    .map((l) => `${l.worker}\0${l.key}\0${l.token}`));
  const lock = v.lock;
  const calls = new Set([...model.calls.values()].filter((c) => c.invoke.lease !== undefined && leases.has(c.invoke.lease)).map((c) => c.id));
  for (const id of leases) {
    const l = model.leases.get(id);
    if (l) calls.add(l.call);
  }
  // close() of the workers involved: it ends every lease of its instance.
  const workers = new Set([...leases].map((id) => model.leases.get(id)?.worker));
  for (const c of model.calls.values()) if (c.invoke.op === "close" && workers.has(c.worker)) calls.add(c.id);
  const [from, to] = v.window ?? [model.endAt - 2_000, model.endAt];
  const first = Math.min(from - BEFORE_MS, ...[...leases].map((id) => model.leases.get(id)?.start ?? Infinity));
  const relevant = (e: HistoryEvent): boolean => {
    if (e.type === "fault") return e.phase !== "skip" && (e.phase !== "hit" || typeof e.detail?.key !== "string" || lockOfRedisKey(e.detail.key) === lock);
    if ("lease" in e && typeof e.lease === "string" && leases.has(e.lease)) return true;
    if ("call" in e && typeof e.call === "string" && calls.has(e.call)) return true;
    if (e.type === "lease" && lock !== undefined && lockOf(e.prim, e.key) === lock) return true;
    // Renewals of the holds involved (the watchdog's and extend's confirmations).
    if (e.type === "renew") return holds.has(`${e.w}\0${e.key}\0${e.token}`);
    return false;
  };
  const picked = model.events.filter((e) => e.t >= first && e.t <= to + AFTER_MS && relevant(e));
  if (picked.length <= MAX_LINES) return picked.map(line);
  // Too long: the violation's own window stays whole; before it, the acquisitions of the leases
  // involved, the faults and the calls on them, then as many polls as fit.
  // Inside the window, routine looks (held, unchanged) only near its end, where belief ran out.
  const core = picked.filter((e) => e.t >= from - CORE_BEFORE_MS &&
    !(e.type === "obs" && e.via === "poll" && e.held && e.t < to - 60 && e.t > from + 10));
  const before = picked.filter((e) => e.t < from - CORE_BEFORE_MS);
  const essential = before.filter((e) => !(e.type === "obs" && e.via === "poll") && e.type !== "renew");
  const room = Math.max(0, MAX_LINES - core.length);
  const kept = new Set(essential.slice(-room));
  for (const e of before) if (kept.size < room && !kept.has(e)) kept.add(e);
  const head = before.filter((e) => kept.has(e));
  const skipped = before.length - head.length;
  return [...head.map(line), ...(skipped > 0 ? [`   ... ${skipped} more looks and renewals before the window ...`] : []), ...core.map(line)];
}

/** Counts per checker and severity. */
export function summarize(violations: readonly Violation[]): string[] {
  const counts = new Map<string, number>();
  for (const v of violations) counts.set(`${v.checker} [${v.severity}]`, (counts.get(`${v.checker} [${v.severity}]`) ?? 0) + 1);
  return [...counts].sort().map(([k, n]) => `  ${k}: ${n}`);
}
