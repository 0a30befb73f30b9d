/**
 * The resource tier: what the protected data shows at the end of the run.
 *  - Fenced registers (never allowed to break): a log written only by
 *    `guard.write(token, "RPUSH", log, "<writeId>:<token>")`. Tokens never go down in log order,
 *    every write the client saw accepted is there exactly once, nothing is there twice (a replayed
 *    write) and nothing the client saw refused is there.
 *  - Counters updated by read-modify-write inside sections: two acknowledged writes of the same
 *    value mean two sections read the same value, i.e. an update was lost.
 */
import type { CounterEvent } from "../history.js";
import type { Model } from "./model.js";
import { brokenAssumption, type Violation } from "./violation.js";

/** A resource's log as read from Redis (null: could not be read). */
export type GuardLogs = ReadonlyMap<string, readonly string[] | null>;

export function checkFencedRegisters(model: Model, logs: GuardLogs): Violation[] {
  const out: Violation[] = [];
  const byResource = new Map<string, typeof model.guards[number][]>();
  for (const g of model.guards) byResource.set(g.resource, [...(byResource.get(g.resource) ?? []), g]);
  for (const [resource, writes] of byResource) {
    const log = logs.get(resource);
    const lock = `resource:${resource}`;
    // Data loss on the server (restart without persistence, failover) within `span` can drop
    // entries and the highest token: that breaks an assumption, not the guard. A write applied
    // twice is never explained by a loss.
    const report = (message: string, span: [number, number], replay = false): void => {
      const assumption = replay ? undefined : brokenAssumption(model, span[0], span[1]);
      const base = { checker: "fenced-register" as const, lock, message, window: span, ...(replay && { patterns: ["replayed-write" as const] }) };
      out.push(assumption ? { ...base, severity: "assumption-broken", assumption } : { ...base, severity: "violation" });
    };
    if (log === null || log === undefined) {
      report(`the log of ${resource} could not be read`, [0, model.endAt]);
      continue;
    }
    const entries = log.map((raw) => {
      const i = raw.lastIndexOf(":");
      return { writeId: raw.slice(0, i), token: BigInt(raw.slice(i + 1)) };
    });
    const byId = new Map(writes.map((w) => [w.writeId, w]));
    const seen = new Map<string, number>();
    let highest: { token: bigint; writeId: string } | undefined;
    entries.forEach((e, index) => {
      if (highest && e.token < highest.token) {
        const span: [number, number] = [byId.get(highest.writeId)?.t ?? 0, byId.get(e.writeId)?.t ?? model.endAt];
        report(`${resource}: token ${e.token} (write ${e.writeId}) written after ${highest.token} (write ${highest.writeId}), ` +
          `log position ${index}: the fence went backwards`, span);
      }
      if (!highest || e.token > highest.token) highest = e;
      seen.set(e.writeId, (seen.get(e.writeId) ?? 0) + 1);
    });
    for (const [writeId, count] of seen) {
      const w = byId.get(writeId);
      const at: [number, number] = [w?.t ?? 0, w?.t ?? 0];
      if (count > 1) report(`${resource}: write ${writeId} (token ${w?.token ?? "?"}) is in the log ${count} times: a replayed write was applied again`, at, true);
      if (w?.outcome === "refused") report(`${resource}: write ${writeId} was refused to the client but is in the log`, at);
    }
    for (const w of writes) {
      if (w.outcome === "written" && !seen.has(w.writeId)) {
        report(`${resource}: write ${w.writeId} (token ${w.token}) was accepted but is not in the log`, [w.t, model.endAt]);
      }
    }
  }
  return out;
}

/** Final counter values as read from Redis (null: could not be read). */
export type CounterFinals = ReadonlyMap<string, number | null>;

export function checkCounters(model: Model, finals: CounterFinals): Violation[] {
  const out: Violation[] = [];
  const byKey = new Map<string, typeof model.counters[number][]>();
  for (const c of model.counters) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c]);
  for (const [key, updates] of byKey) {
    const acked = updates.filter((u) => u.outcome === "ok");
    const siblingsRacedAt = siblingRace(model, acked);
    const byValue = new Map<number, typeof acked>();
    for (const u of acked) byValue.set(u.wrote, [...(byValue.get(u.wrote) ?? []), u]);
    for (const [value, same] of byValue) {
      if (same.length < 2) continue;
      const leases = same.map((u) => model.leases.get(u.lease));
      // Re-entrant siblings of one hold (same owner and token) share the lock by design: their
      // race on the counter is the caller's, not the lock's.
      const holds = new Set(leases.map((l) => (l ? `${l.owner}\0${l.token}` : "?")));
      if (holds.size < 2) continue;
      // A section whose lease was lost before it ended was told (release/withLock rejected).
      const told = leases.some((l) => l === undefined || (l.lostAt !== undefined && (l.end === undefined || l.lostAt <= l.end)));
      const window = [Math.min(...same.map((u) => u.t)), Math.max(...same.map((u) => u.t))] as [number, number];
      const message = `${key}: ${same.length} sections each wrote ${value} (read ${value - 1}): ${same.length - 1} update(s) lost ` +
        `(leases ${same.map((u) => u.lease).join(", ")})`;
      // A holder stopped (SIGSTOP) between its look and its write cannot be called back: the
      // documented gap that only fencing closes.
      const paused = same.find((u) => {
        const look = lastLookBefore(model, u.lease, u.t);
        return look !== undefined && model.faults.some((f) => f.fault === "pause-worker" && f.target === `worker${u.w}` &&
          f.from <= u.t && f.to >= look);
      });
      const assumption = brokenAssumption(model, window[0], window[1]) ??
        (paused && `worker ${paused.w} was stopped (SIGSTOP) between ${paused.lease}'s last look and its write: a write ` +
          "under way cannot be called back (see docs/quorum.md, What it does not protect against)") ??
        (siblingsRacedAt !== undefined && siblingsRacedAt <= window[1] ? siblingNote(siblingsRacedAt) : undefined);
      const base = { checker: "counter" as const, lock: key, message, window, leases: same.map((u) => u.lease) };
      if (assumption) out.push({ ...base, severity: "assumption-broken", assumption });
      else if (told) out.push({ ...base, severity: "acknowledged" });
      else out.push({ ...base, severity: "violation" });
    }
    const final = finals.get(key);
    const highest = Math.max(0, ...acked.map((u) => u.wrote));
    if (final !== undefined && final !== null && final < highest) {
      const last = acked.find((u) => u.wrote === highest);
      const assumption = brokenAssumption(model, last?.t ?? 0, model.endAt) ??
        (siblingsRacedAt !== undefined ? siblingNote(siblingsRacedAt) : undefined);
      const base = { checker: "counter" as const, lock: key, message: `${key} ends at ${final}, below the acknowledged write of ${highest}` };
      out.push(assumption ? { ...base, severity: "assumption-broken", assumption } : { ...base, severity: "violation" });
    }
  }
  return out;
}

/**
 * The first moment two sections of ONE hold (re-entrant siblings, e.g. branches of Promise.all)
 * had a read-modify-write of the counter under way at once. They share the lock by design, so the
 * counter is theirs to race; what follows on that counter proves nothing about the lock.
 */
function siblingRace(model: Model, acked: readonly CounterEvent[]): number | undefined {
  const spans = acked.map((u) => ({ u, hold: holdOf(model, u.lease), from: readAt(model, u.lease, u.t) ?? u.t }));
  let first: number | undefined;
  for (const a of spans) {
    for (const b of spans) {
      if (a.u === b.u || a.u.lease === b.u.lease || a.hold === undefined || a.hold !== b.hold) continue;
      if (a.from <= b.u.t && b.from <= a.u.t) first = Math.min(first ?? Infinity, Math.max(a.from, b.from));
    }
  }
  return first;
}

const siblingNote = (at: number): string =>
  `sections of one hold (re-entrant siblings) raced on the counter from ${at.toFixed(1)} ms: they share the lock by design`;

function holdOf(model: Model, lease: string): string | undefined {
  const l = model.leases.get(lease);
  return l && `${l.key}\0${l.prim}\0${l.owner}\0${l.token}`;
}

/** When the counter update of `lease` written at `t` started: its read (GET). */
function readAt(model: Model, lease: string, t: number): number | undefined {
  let at: number | undefined;
  for (const c of model.calls.values()) {
    const i = c.invoke;
    if (i.op === "counter-get" && i.lease === lease && i.t <= t && (at === undefined || i.t > at)) at = i.t;
  }
  return at;
}

/** When the holder of `lease` last looked at it before `t` (its look before a write). */
function lastLookBefore(model: Model, lease: string, t: number): number | undefined {
  let at: number | undefined;
  for (const e of model.events) {
    if (e.t > t) break;
    if (e.type === "obs" && e.lease === lease && e.via === "before-write") at = e.t;
  }
  return at;
}
