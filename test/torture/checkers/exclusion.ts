/**
 * The lease tier: who believed they held what, when. A lease's believed interval runs from the
 * moment its acquisition resolved to the last look that saw `held === true` with the signal not
 * aborted. Stamps are conservative on both ends (a look is stamped before it reads, an
 * acquisition after it resolved), so an overlap of believed intervals is an overlap that really
 * happened: two holders each trusted a lease at the same instant.
 */
import { descendsFrom, lockOf, type LeaseRecord, type Model } from "./model.js";
import { brokenAssumption, leasePatterns, patternsOf, type Violation } from "./violation.js";

interface Interval {
  readonly lease: LeaseRecord;
  readonly from: number;
  readonly to: number;
}

function believed(model: Model, filter: (l: LeaseRecord) => boolean): Map<string, Interval[]> {
  const byLock = new Map<string, Interval[]>();
  for (const l of model.leases.values()) {
    if (!filter(l) || l.believedEnd === undefined || l.believedEnd <= l.start) continue;
    // A multiLock's lease holds the mutex of each of its keys, each with that key's token.
    for (const lease of [l, ...l.others.map((o) => ({ ...l, key: o.key, token: o.token }))]) {
      const lock = lockOf(lease.prim, lease.key);
      const list = byLock.get(lock) ?? [];
      list.push({ lease, from: l.start, to: l.believedEnd });
      byLock.set(lock, list);
    }
  }
  for (const list of byLock.values()) list.sort((a, b) => a.from - b.from);
  return byLock;
}

/** Every pair of intervals of one lock that overlap, earlier start first. */
function* overlapping(list: readonly Interval[]): Generator<[Interval, Interval]> {
  const active: Interval[] = [];
  for (const next of list) {
    for (let i = active.length - 1; i >= 0; i--) if ((active[i] as Interval).to <= next.from) active.splice(i, 1);
    for (const a of active) yield [a, next];
    active.push(next);
  }
}

const exclusive = (l: LeaseRecord): boolean => l.prim === "mutex" || l.prim === "write";

/** One hold: re-entries and explicit-owner sharing have the same owner and the same token. */
const sameHold = (a: LeaseRecord, b: LeaseRecord): boolean => a.owner === b.owner && a.token === b.token;

function describe(l: LeaseRecord): string {
  return `${l.id} (worker ${l.worker}, owner ${l.owner}, token ${l.token}, believed ${l.start.toFixed(1)}–${(l.believedEnd ?? l.start).toFixed(1)} ms)`;
}

/** Mutexes and write locks: two different holds believed at once. Also readers against writers. */
export function checkExclusion(model: Model): Violation[] {
  const out: Violation[] = [];
  // One report per pair of holds: an intruder overlaps the outer lease and its re-entries alike.
  const reported = new Set<string>();
  const hold = (l: LeaseRecord): string => `${l.prim === "read" ? l.id : `${l.owner}\0${l.token}`}`;
  for (const [lock, list] of believed(model, () => true)) {
    if (lock.startsWith("sem:")) continue;
    for (const [a, b] of overlapping(list)) {
      const x = a.lease;
      const y = b.lease;
      const pair = `${lock}\0${[hold(x), hold(y)].sort().join("\0")}`;
      if (reported.has(pair)) continue;
      const window = [b.from, Math.min(a.to, b.to)] as const;
      if (exclusive(x) && exclusive(y)) {
        if (sameHold(x, y)) continue;
        reported.add(pair);
        if (x.owner === y.owner) {
          out.push(classify(model, {
            checker: "reentry-token", lock, leases: [x.id, y.id], window,
            message: `two leases of one owner believed at once with different fencing tokens: ${describe(x)} and ${describe(y)}`,
            patterns: patternsOf(model, x, y),
          }, x.start));
          continue;
        }
        out.push(classify(model, {
          checker: "believed-overlap", lock, leases: [x.id, y.id], window,
          message: `two holds believed they held ${lock} at once for ${(window[1] - window[0]).toFixed(1)} ms: ${describe(x)} and ${describe(y)}`,
          patterns: patternsOf(model, x, y),
        }, x.start));
        continue;
      }
      if (x.prim === "read" && y.prim === "read") continue;
      const [reader, writer] = x.prim === "read" ? [x, y] : [y, x];
      // A writer may read inside its own write section (its flow's nested reads join it): the
      // reader descends from a lease of the writer's hold.
      if (descendsFrom(model, reader, (a) => a.prim === "write" && sameHold(a, writer))) continue;
      reported.add(pair);
      out.push(classify(model, {
        checker: "read-write", lock, leases: [x.id, y.id], window,
        message: `a reader and a writer believed they held ${lock} at once: reader ${describe(reader)}, writer ${describe(writer)}`,
        patterns: patternsOf(model, x, y),
      }, x.start));
    }
  }
  return out;
}

/** Semaphores: never more believed holders than permits. One report per episode of excess. */
export function checkPermits(model: Model): Violation[] {
  const out: Violation[] = [];
  for (const [lock, list] of believed(model, (l) => l.prim === "sem")) {
    const points = list.flatMap((i) => [{ at: i.from, d: 1, i }, { at: i.to, d: -1, i }])
      .sort((p, q) => p.at - q.at || p.d - q.d); // ends before starts at the same instant
    const active = new Set<Interval>();
    let inExcess = false;
    for (const p of points) {
      if (p.d === 1) active.add(p.i);
      else active.delete(p.i);
      const permits = Math.min(...[...active].map((i) => i.lease.permits ?? Infinity));
      const over = active.size > permits;
      if (over && !inExcess) {
        const leases = [...active].map((i) => i.lease);
        const until = Math.min(...[...active].map((i) => i.to));
        // What explains it is on the holders that came first (one of them should have been gone).
        const patterns = [...new Set(leases.filter((l) => l.start < p.at).flatMap((l) => leasePatterns(model, l, p.at)))];
        out.push(classify(model, {
          checker: "semaphore", lock, leases: leases.map((l) => l.id), window: [p.at, until],
          message: `${active.size} believed holders of ${lock} (${permits} permits): ${leases.map(describe).join(", ")}`,
          // A specific explanation makes the fallbacks (a dropped connection somewhere, none) moot.
          patterns: patterns.some((x) => x !== "unexplained" && x !== "resent-command")
            ? patterns.filter((x) => x !== "unexplained" && x !== "resent-command")
            : patterns.length > 1 ? patterns.filter((x) => x !== "unexplained") : patterns,
        }, Math.min(...leases.map((l) => l.start))));
      }
      inExcess = over;
    }
  }
  return out;
}

type Unclassified = Omit<Violation, "severity" | "assumption">;

/** `since`: from when a data loss could explain it (the earlier hold's acquisition). */
function classify(model: Model, v: Unclassified, since?: number): Violation {
  const [from, to] = v.window ?? [0, model.endAt];
  const assumption = brokenAssumption(model, since ?? from, to);
  return assumption ? { ...v, severity: "assumption-broken", assumption } : { ...v, severity: "violation" };
}

export { classify };
