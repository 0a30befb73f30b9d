/**
 * Liveness and hygiene: every call settles within its bound (time the worker spent stopped by the
 * nemesis does not count); after the nemesis heals and the workers close, every lock becomes
 * free and the queues drain; no surelock key lives without a TTL; no worker keeps handles,
 * listeners or connections after close(); nothing escapes as an unhandled rejection.
 */
import { pausedWithin, type Model } from "./model.js";
import type { Violation } from "./violation.js";

/** Acquisitions are bounded up to the moment they hand out a lease, not through the section. */
const ACQUIRING = new Set(["acquire", "tryAcquire", "withLock", "foreign-try"]);

export function checkCalls(model: Model): Violation[] {
  const out: Violation[] = [];
  // A worker that had to close its instances to end calls still open after the stop.
  const forced = new Map<number, number>();
  for (const e of model.events) if (e.type === "forced-close") forced.set(e.w, e.t);
  for (const c of model.calls.values()) {
    const op = c.invoke.op;
    const end = ACQUIRING.has(op) ? c.leaseAt ?? c.doneAt : c.doneAt;
    const what = `${op}${c.invoke.key ? ` of ${c.invoke.prim ?? ""}:${c.invoke.key}` : ""} (call ${c.id}, worker ${c.worker})`;
    const forcedAt = forced.get(c.worker);
    if (forcedAt !== undefined && c.invoke.t < forcedAt && (end === undefined || end >= forcedAt)) {
      out.push({
        checker: "liveness", severity: "violation", window: [c.invoke.t, forcedAt],
        message: `${what} started at ${c.invoke.t.toFixed(1)} ms and was still open when its worker had to close its instances, long after the stop`,
      });
      continue;
    }
    if (end === undefined) {
      out.push({
        checker: "liveness", severity: "violation", window: [c.invoke.t, model.endAt],
        message: `${what} started at ${c.invoke.t.toFixed(1)} ms and never settled`,
      });
      continue;
    }
    const bound = c.invoke.boundMs;
    if (bound === null) continue;
    const elapsed = end - c.invoke.t - pausedWithin(model, c.worker, c.invoke.t, end);
    if (elapsed > bound) {
      out.push({
        checker: "liveness", severity: "violation", window: [c.invoke.t, end],
        message: `${what} took ${elapsed.toFixed(0)} ms (not counting its worker's pauses and stalls), over its bound of ${bound} ms`,
      });
    }
  }
  return out;
}

/** What the orchestrator found in Redis after the run. */
export interface Sweep {
  /** How long after the workers closed until every lock was free and every queue drained (null: not within the deadline). */
  readonly drainedAfterMs: number | null;
  readonly deadlineMs: number;
  /** Locks still held, queues still with live tickets, at the deadline. */
  readonly stillBusy: readonly string[];
  /** surelock keys without an expiry. */
  readonly noTtl: readonly string[];
  /** Queue entries whose deadline is further away than any live waiter could have set. */
  readonly orphanTickets: readonly string[];
  readonly error?: string;
}

export function checkSweep(sweep: Sweep): Violation[] {
  const out: Violation[] = [];
  if (sweep.error) out.push({ checker: "hygiene", severity: "violation", message: `the end-of-run sweep failed: ${sweep.error}` });
  if (sweep.drainedAfterMs === null) {
    out.push({
      checker: "liveness", severity: "violation",
      message: `${sweep.deadlineMs} ms after the nemesis healed and every worker closed, still busy: ${sweep.stillBusy.join(", ")}`,
    });
  }
  for (const key of sweep.noTtl) out.push({ checker: "hygiene", severity: "violation", message: `${key} has no TTL` });
  for (const t of sweep.orphanTickets) out.push({ checker: "hygiene", severity: "violation", message: `orphan queue ticket: ${t}` });
  return out;
}

export function checkWorkers(model: Model): Violation[] {
  const out: Violation[] = [];
  for (const e of model.events) {
    if (e.type === "leaks") {
      const left = { ...e.handles, ...e.listeners };
      if (Object.keys(left).length > 0) {
        out.push({
          checker: "hygiene", severity: "violation", window: [e.t, e.t],
          message: `worker ${e.w} after close(): left ${Object.entries(left).map(([k, n]) => `${n} ${k}`).join(", ")}`,
        });
      }
    } else if (e.type === "listener-leak") {
      out.push({
        checker: "hygiene", severity: "violation", window: [e.t, e.t],
        message: `worker ${e.w}: call ${e.call} settled but left ${e.count} abort listener(s) on the caller's signal`,
      });
    } else if (e.type === "note" && e.level === "error") {
      out.push({ checker: "hygiene", severity: "violation", window: [e.t, e.t], message: `worker ${e.w}: ${e.text}` });
    }
  }
  return out;
}
