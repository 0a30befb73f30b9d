/**
 * What the checkers read: a history folded into leases (with their believed intervals), calls
 * (with their durations) and faults. Pure: built from the events alone.
 */
import type {
  CounterEvent, ErrorInfo, FaultEvent, GuardEvent, HistoryEvent, InvokeEvent, LeaseEvent, Prim,
} from "../history.js";

export interface LeaseRecord {
  readonly id: string;
  readonly worker: number;
  readonly call: string;
  readonly key: string;
  readonly prim: Prim;
  readonly token: string;
  readonly owner: string;
  readonly ttl: number;
  /** Which of its worker's Surelock instances (a replaced one keeps the index). */
  readonly instance: number;
  readonly parent: string | undefined;
  readonly late: boolean;
  readonly permits: number | undefined;
  /** A multiLock's lease: its other keys, each with its own token (`key` and `token` are the first's). */
  readonly others: readonly { readonly key: string; readonly token: string }[];
  /** When the acquisition resolved. */
  readonly start: number;
  /** The last look that saw it held and its signal not aborted (undefined: never). */
  believedEnd: number | undefined;
  /** The first look that saw it not held or aborted, or its abort. */
  lostAt: number | undefined;
  lostReason: string | undefined;
  /** When the holder was done with it. */
  end: number | undefined;
  /** The holder's last look, as its section ended (before it released): when, and what it saw. */
  endLook: { readonly at: number; readonly held: boolean } | undefined;
}

export interface CallRecord {
  readonly id: string;
  readonly worker: number;
  readonly invoke: InvokeEvent;
  /** For acquisitions: when the lease was handed out. */
  leaseAt: number | undefined;
  lease: string | undefined;
  doneAt: number | undefined;
  outcome: "ok" | "fail" | undefined;
  value: string | number | boolean | null | undefined;
  error: ErrorInfo | undefined;
}

/** A span during which a fault was in force (a start and its end, or the run's end). */
export interface FaultSpan {
  readonly fault: FaultEvent["fault"];
  readonly target: string;
  readonly from: number;
  readonly to: number;
  readonly dataLoss: boolean;
  readonly detail: FaultEvent["detail"];
}

export interface Model {
  readonly events: readonly HistoryEvent[];
  readonly leases: ReadonlyMap<string, LeaseRecord>;
  readonly calls: ReadonlyMap<string, CallRecord>;
  readonly faults: readonly FaultSpan[];
  /** Cuts that hit a command (the proxy forwarded it and swallowed the reply). */
  readonly cuts: readonly FaultEvent[];
  readonly guards: readonly GuardEvent[];
  readonly counters: readonly CounterEvent[];
  /** Spans in which a worker's event loop ran nothing (its heartbeat's stalls), by worker. */
  readonly stalls: ReadonlyMap<number, readonly { readonly from: number; readonly to: number }[]>;
  readonly endAt: number;
}

/** Which lock a lease is of: mutexes, read-write locks and semaphores of one name are different locks. */
export const lockOf = (prim: Prim, key: string): string =>
  `${prim === "mutex" ? "mutex" : prim === "sem" ? "sem" : "rw"}:${key}`;

/** The lock a surelock Redis key belongs to (`surelock:rw:{doc}:lock` → `rw:doc`), if any. */
export function lockOfRedisKey(redisKey: string): string | undefined {
  const m = /^[^:{]+:(?:(rw|sem):)?\{([^}]*)\}/.exec(redisKey);
  if (!m) return undefined;
  return `${m[1] ?? "mutex"}:${m[2]}`;
}

export function buildModel(history: readonly HistoryEvent[]): Model {
  // Stable by time: a worker writes a delayed look down after later events.
  const events = [...history].sort((a, b) => a.t - b.t);
  const leases = new Map<string, LeaseRecord>();
  const calls = new Map<string, CallRecord>();
  const open = new Map<string, FaultEvent>();
  const faults: FaultSpan[] = [];
  const cuts: FaultEvent[] = [];
  const guards: GuardEvent[] = [];
  const counters: CounterEvent[] = [];
  const stalls = new Map<number, { from: number; to: number }[]>();
  const endAt = events.length === 0 ? 0 : (events[events.length - 1] as HistoryEvent).t;
  const span = (start: FaultEvent, to: number, end?: FaultEvent): FaultSpan => ({
    fault: start.fault, target: start.target, from: start.t, to,
    dataLoss: start.dataLoss === true || end?.dataLoss === true, detail: start.detail,
  });

  for (const e of events) {
    switch (e.type) {
      case "invoke":
        calls.set(e.call, {
          id: e.call, worker: e.w, invoke: e, leaseAt: undefined, lease: undefined, doneAt: undefined,
          outcome: undefined, value: undefined, error: undefined,
        });
        break;
      case "ok":
      case "fail": {
        const c = calls.get(e.call);
        if (!c) break;
        c.doneAt = e.t;
        c.outcome = e.type;
        if (e.type === "ok") c.value = e.value;
        else c.error = e.error;
        break;
      }
      case "lease": {
        leases.set(e.lease, fromLease(e));
        const c = calls.get(e.call);
        if (c && c.leaseAt === undefined) {
          c.leaseAt = e.t;
          c.lease = e.lease;
        }
        break;
      }
      case "obs": {
        const l = leases.get(e.lease);
        if (!l) break;
        if (e.via === "end") l.endLook = { at: e.t, held: e.held && !e.aborted };
        if (e.held && !e.aborted) {
          if (l.lostAt === undefined) l.believedEnd = Math.max(l.believedEnd ?? -Infinity, e.t);
        } else if (l.lostAt === undefined) {
          l.lostAt = e.t;
        }
        break;
      }
      case "abort": {
        const l = leases.get(e.lease);
        if (l && l.lostAt === undefined) {
          l.lostAt = e.t;
          l.lostReason = e.reason;
        } else if (l) {
          l.lostReason ??= e.reason;
        }
        break;
      }
      case "end": {
        const l = leases.get(e.lease);
        if (l) l.end = e.t;
        break;
      }
      case "guard":
        guards.push(e);
        break;
      case "counter":
        counters.push(e);
        break;
      case "stall":
        stalls.set(e.w, [...(stalls.get(e.w) ?? []), { from: e.from, to: e.t }]);
        break;
      case "fault":
        if (e.phase === "hit") cuts.push(e);
        else if (e.phase === "start") {
          const key = `${e.fault}:${e.target}`;
          const prev = open.get(key);
          if (prev) faults.push(span(prev, e.t));
          // Instant faults (a reset, a failover, a cut's arming) have no end event.
          if (e.fault === "reset" || e.fault === "failover" || e.fault === "cut") faults.push(span(e, e.t));
          else open.set(key, e);
        } else if (e.phase === "end") {
          const key = `${e.fault}:${e.target}`;
          const start = open.get(key);
          if (start) {
            open.delete(key);
            faults.push(span(start, e.t, e));
          }
        }
        break;
      default:
        break;
    }
  }
  for (const start of open.values()) faults.push(span(start, endAt));
  return { events, leases, calls, faults, cuts, guards, counters, stalls, endAt };
}

function fromLease(e: LeaseEvent): LeaseRecord {
  return {
    id: e.lease, worker: e.w, call: e.call, key: e.key, prim: e.prim, token: e.token, owner: e.owner, ttl: e.ttl, instance: e.instance,
    parent: e.parent, late: e.late === true, permits: e.permits,
    others: (e.keys ?? []).slice(1).map((key, i) => ({ key, token: e.tokens?.[i + 1] ?? "" })), start: e.t,
    believedEnd: undefined, lostAt: undefined, lostReason: undefined, end: undefined, endLook: undefined,
  };
}

/** Whether one of `lease`'s parents (parent, grandparent, ...) satisfies `test`. */
export function descendsFrom(model: Model, lease: LeaseRecord, test: (ancestor: LeaseRecord) => boolean): boolean {
  let p = lease.parent === undefined ? undefined : model.leases.get(lease.parent);
  for (let depth = 0; p !== undefined && depth < 50; depth++) {
    if (test(p)) return true;
    p = p.parent === undefined ? undefined : model.leases.get(p.parent);
  }
  return false;
}

/**
 * Time within [from, to] during which `worker` could run nothing: stopped by the nemesis, or its
 * event loop stalled (a starved process). Overlapping spans count once.
 */
export function pausedWithin(model: Model, worker: number, from: number, to: number): number {
  const spans = [
    ...model.faults.filter((f) => f.fault === "pause-worker" && f.target === `worker${worker}`),
    ...(model.stalls.get(worker) ?? []),
  ].map((f) => [Math.max(from, f.from), Math.min(to, f.to)] as const).filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let total = 0;
  let reached = from;
  for (const [a, b] of spans) {
    if (b <= reached) continue;
    total += b - Math.max(a, reached);
    reached = b;
  }
  return total;
}
