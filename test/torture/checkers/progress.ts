/**
 * Progress: a lock whose waiters are present must change hands. A lock that moves a few times a
 * second while ten workers wait for it passes every bound on single calls (each acquire settles
 * within its timeout) and yet has collapsed; this checker sees it. For each mutex it adds up the
 * time during which someone waited for it, nobody held it (no lease of it was out: from its start
 * until its release settled) and
 * nothing was faulted (no fault in force, nor within a grace after one ended: a paused holder's
 * lock stays taken in Redis until its ttl; a call that found Redis unreachable marks an outage the
 * same way), from the lock's first holder until the workers are told to stop, and counts the holder
 * changes that ended such time. A lost lease holds its lock for its ttl after it was lost, and a
 * one-shot attempt in flight (tryAcquire) may hold it too.
 * With enough of that time to judge, the mean idle time per holder change must stay under the
 * floor: a handoff takes a few round trips, so one change per `floorMs` of idle time is far below
 * any healthy lock.
 */
import { lockOf, type LeaseRecord, type Model } from "./model.js";
import { longestTtl, type Violation } from "./violation.js";

/** The calls whose time counts as waiting for a lock (tryAcquire never waits). */
const WAITING = new Set(["acquire", "withLock"]);
/** Errors that say Redis could not be reached: the time around them is faulted, whatever caused it. */
const OUTAGE = new Set(["ConnectionError", "QuorumError"]);

export interface ProgressFloor {
  /** Longest mean idle time per holder change, ms, while waiters are present and nothing is faulted. */
  readonly floorMs: number;
  /** Idle time needed before the lock is judged, ms (a few slow handoffs are not a collapse). */
  readonly minIdleMs: number;
  /** After a fault ends, how long its effects may last (a lock held by a paused or lost holder until its ttl), ms. */
  readonly graceMs: number;
}

/**
 * The floor for a deployment: one holder change per 50 ms of idle time with waiters (a healthy
 * handoff is one to a few round trips: single node, Sentinel, Cluster and quorum alike), judged
 * once a lock has been idle with waiters for 2 s in all (a 500 ms threshold flagged healthy runs
 * on a loaded 2-core machine at 504 to 1,200 ms of idle time; a collapse such as quorum mode's
 * 509 ms per holder change builds up seconds within a run); the grace after a fault is the longest
 * lease ttl in the run. That covers the wake-up faults too: a waiter whose announcement or turn
 * was held or lost hears of it from its next ticket refresh, a third of its ticket lease (at most
 * its ttl) later; a stalled connection's holds and tickets lapse within their ttl once it passes
 * again. (The proxy loses messages only, never a subscription's confirmation: losing those left a
 * subscriber deaf until it reconnected, a stall of the harness, not of the lock.)
 */
export function progressFloor(model: Model): ProgressFloor {
  let ttl = 0;
  for (const l of model.leases.values()) ttl = Math.max(ttl, l.ttl);
  return { floorMs: 50, minIdleMs: 2_000, graceMs: ttl };
}

type Span = readonly [number, number];

/** `spans` merged into disjoint, sorted spans. */
function merged(spans: Span[]): Span[] {
  const sorted = spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** `from` minus every span of `cut` (both merged). */
function minus(from: readonly Span[], cut: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const [a, b] of from) {
    let start = a;
    for (const [c, d] of cut) {
      if (d <= start || c >= b) continue;
      if (c > start) out.push([start, c]);
      start = Math.max(start, d);
      if (start >= b) break;
    }
    if (start < b) out.push([start, b]);
  }
  return out;
}

export function checkProgress(model: Model, floor: ProgressFloor = progressFloor(model)): Violation[] {
  // Faulted: a fault in force (and its grace), and any call that found Redis unreachable (on a
  // loaded machine a server may not answer for a second without the nemesis doing anything).
  const outages = [...model.calls.values()].filter((c) => OUTAGE.has(c.error?.name ?? ""))
    .map((c): Span => [c.invoke.t, (c.doneAt ?? model.endAt) + floor.graceMs]);
  // A worker whose event loop ran nothing (a starved process) could neither hand a lock over nor
  // take its turn: as faulted as a stopped one, for the span of the stall.
  const stalls = [...model.stalls.values()].flat().map((s): Span => [s.from, s.to]);
  const faulted = merged([...model.faults.map((f): Span => [f.from, f.to + floor.graceMs]), ...outages, ...stalls]);
  const locks = new Map<string, { waits: Span[]; held: Span[]; starts: number[] }>();
  const of = (lock: string) => {
    let l = locks.get(lock);
    if (!l) locks.set(lock, (l = { waits: [], held: [], starts: [] }));
    return l;
  };
  for (const c of model.calls.values()) {
    const { op, prim, key } = c.invoke;
    if (prim !== "mutex" || key === undefined) continue;
    // A one-shot attempt in flight may hold the lock in Redis before its caller knows (its reply
    // slow or lost): nobody is owed the lock meanwhile.
    if (op === "tryAcquire" || op === "foreign-try") {
      for (const k of [key, ...(typeof c.invoke.args?.with === "string" ? [c.invoke.args.with] : [])]) {
        of(lockOf(prim, k)).held.push([c.invoke.t, c.leaseAt ?? c.doneAt ?? model.endAt]);
      }
    }
    // A multiLock's waiter waits for all of its keys at once: its first key free and it still
    // waiting is no stall (it judges nothing); its hold, once it has it, holds every key (below).
    const multi = c.invoke.args?.with !== undefined;
    if (WAITING.has(op) && !multi) of(lockOf(prim, key)).waits.push([c.invoke.t, c.leaseAt ?? c.doneAt ?? model.endAt]);
  }
  // A lease holds its lock until it is given back: its release call settled (a holder may be done
  // with its section well before it releases), or its withLock call returned.
  const givenBack = new Map<string, number>();
  for (const c of model.calls.values()) {
    const lease = c.invoke.op === "release" ? c.invoke.lease : c.invoke.op === "withLock" ? c.lease : undefined;
    if (lease !== undefined) givenBack.set(lease, Math.max(givenBack.get(lease) ?? 0, c.doneAt ?? model.endAt));
  }
  for (const l of model.leases.values()) {
    if (l.prim !== "mutex") continue;
    for (const key of [l.key, ...l.others.map((o) => o.key)]) holds(of(lockOf(l.prim, key)), l);
  }
  function holds(lock: { held: Span[]; starts: number[] }, l: LeaseRecord): void {
    // A re-entry (or a join by owner) keeps the hold out as long as it lasts, but changes no hands.
    // A lost lease's hold may stay in Redis until its ttl runs out (renewals applied, unconfirmed),
    // the longest one an extend() gave it (a stalled connection's holder extended to seconds).
    const lostHold = l.lostAt === undefined ? 0 : l.lostAt + longestTtl(model, l, l.lostAt);
    lock.held.push([l.start, Math.max(l.end ?? l.lostAt ?? model.endAt, givenBack.get(l.id) ?? 0, lostHold)]);
    if (l.parent === undefined) lock.starts.push(l.start);
  }
  // A join by owner that found Redis unreachable may have entered its owner's hold before its
  // reply was lost, and its give-back may not have reached Redis either: that entry then keeps the
  // hold while the owner's other entries renew or extend it, and for the last ttl they gave it
  // (renewals only lengthen a hold's life). Nobody is owed the lock meanwhile.
  const ownerLeases = [...model.leases.values()].filter((l) => l.prim === "mutex").sort((a, b) => a.start - b.start);
  for (const c of model.calls.values()) {
    const { prim, key, op, args } = c.invoke;
    const owner = args?.owner;
    if (prim !== "mutex" || key === undefined || typeof owner !== "string" || !OUTAGE.has(c.error?.name ?? "")) continue;
    if (!WAITING.has(op) && op !== "tryAcquire") continue;
    for (const k of [key, ...(typeof args?.with === "string" ? [args.with] : [])]) {
      let until = (c.doneAt ?? model.endAt) + (typeof args?.ttl === "number" ? args.ttl : floor.graceMs);
      for (const l of ownerLeases) {
        if (l.start > until) break;
        if (l.owner !== owner || (l.key !== k && !l.others.some((o) => o.key === k))) continue;
        const over = Math.max(l.end ?? l.lostAt ?? model.endAt, givenBack.get(l.id) ?? 0);
        if (over < c.invoke.t) continue;
        until = Math.max(until, over + longestTtl(model, l, over));
      }
      of(lockOf(prim, k)).held.push([c.invoke.t, until]);
    }
  }
  const stop = model.events.find((e) => e.type === "note" && e.text.includes("workers stop"));
  const stopAt = stop?.t ?? model.endAt;
  const out: Violation[] = [];
  for (const [lock, l] of locks) {
    // From the lock's first holder on: before it, the workers are still connecting and loading scripts.
    const firstHolder = Math.min(...l.starts);
    // Until the workers are told to stop: then holders end their sections and nobody takes over.
    const idle = minus(minus(merged(l.waits), merged(l.held)), faulted).filter(([a, b]) => b > firstHolder && a < stopAt)
      .map(([a, b]): Span => [Math.max(a, firstHolder), Math.min(b, stopAt)]);
    const idleMs = idle.reduce((sum, [a, b]) => sum + (b - a), 0);
    if (idleMs < floor.minIdleMs) continue;
    // A holder change ends an idle span: a lease of this lock starting where the span ends.
    const changes = idle.filter(([, b]) => l.starts.some((s) => Math.abs(s - b) < 1e-6)).length;
    const perChange = idleMs / Math.max(1, changes);
    if (perChange > floor.floorMs) {
      const first = idle[0] as Span;
      const last = idle[idle.length - 1] as Span;
      const longest = [...idle].sort((x, y) => (y[1] - y[0]) - (x[1] - x[0])).slice(0, 3)
        .map(([a, b]) => `${a.toFixed(0)}-${b.toFixed(0)} ms`).join(", ");
      out.push({
        checker: "liveness", severity: "violation", window: [first[0], last[1]],
        message: `${lock}: waiters were present, nobody held it and nothing was faulted for ${idleMs.toFixed(0)} ms in all, ` +
          `and it changed hands ${changes} time(s) after such idle time: ${perChange.toFixed(0)} ms per holder change, ` +
          `over the floor of ${floor.floorMs} ms (longest: ${longest})`,
      });
    }
  }
  return out;
}
