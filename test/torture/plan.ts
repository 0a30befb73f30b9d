/**
 * The operations a worker runs, as plain data drawn from its PRNG before anything runs: what a
 * plan contains never depends on how earlier operations turned out, so one seed always gives the
 * same sequence of operations (the timing of the real run varies; the plan does not).
 */
import type { Rng } from "./prng.js";

export type DeploymentKind = "single" | "sentinel" | "cluster" | "quorum";

/** What the plan needs to know about the run. */
export interface PlanScope {
  readonly deployment: DeploymentKind;
  /** Keys per kind of lock (mutex keys k0..; read-write and semaphore keys are half as many). */
  readonly keys: number;
  /** Default ttl of each Surelock instance of the worker (index = instance). */
  readonly instanceTtls: readonly number[];
}

export type Target =
  /** `with`: a multiLock of `key` and `with` (its lease stands for the mutexes of both keys). */
  | { readonly prim: "mutex"; readonly key: string; readonly ttl?: number; readonly fair: boolean; readonly with?: string }
  | { readonly prim: "read" | "write"; readonly key: string; readonly ttl?: number }
  | { readonly prim: "sem"; readonly key: string; readonly permits: number; readonly ttl?: number };

export type Ending = "release" | "release-twice" | "dispose";

export type AcquireHow =
  | { readonly how: "withLock"; readonly timeout?: number; readonly signalMs?: number; readonly owner?: string }
  | { readonly how: "acquire"; readonly timeout?: number; readonly signalMs?: number; readonly owner?: string; readonly end: Ending }
  | { readonly how: "tryAcquire"; readonly owner?: string; readonly end: Ending };

export type Step =
  /** Time spent in the section (the holder keeps looking at its lease meanwhile). */
  | { readonly do: "work"; readonly ms: number }
  /** Read-modify-write of the lock's plain counter, with a gap between read and write. */
  | { readonly do: "counter"; readonly gapMs: number }
  /** A write through the fencing guard of the lock's resource. */
  | { readonly do: "guard" }
  | { readonly do: "extend"; readonly ttl?: number }
  | { readonly do: "isHeld" }
  /** A nested acquisition of the same lock (a re-entry, or a permit / read hold of its own). */
  | { readonly do: "nest"; readonly section: Section }
  /** Sibling branches inside the section, run with Promise.all. */
  | { readonly do: "fork"; readonly branches: readonly Section[] }
  /** Jobs scheduled in the section that start after it ended (setTimeout / setImmediate). */
  | { readonly do: "later"; readonly via: "timeout" | "immediate"; readonly delayMs: number; readonly jobs: readonly Section[] }
  /** tryAcquire of the same mutex through the worker's other Surelock instance: must get null. */
  | { readonly do: "foreign" };

export interface Section {
  readonly target: Target;
  readonly acquire: AcquireHow;
  readonly instance: number;
  readonly steps: readonly Step[];
}

export type Op =
  | { readonly op: "section"; readonly section: Section }
  /** close() one Surelock instance while the other flows use it, then replace it. */
  | { readonly op: "close"; readonly instance: number; readonly delayMs: number }
  | { readonly op: "idle"; readonly ms: number };

const MAX_DEPTH = 2;

/** Semaphore keys alternate between 2 and 3 permits. */
export const permitsOf = (semIndex: number): number => 2 + (semIndex % 2);

export function mutexKeys(scope: PlanScope): string[] {
  return Array.from({ length: scope.keys }, (_, i) => `k${i}`);
}

export function rwKeys(scope: PlanScope): string[] {
  return Array.from({ length: Math.max(1, Math.floor(scope.keys / 2)) }, (_, i) => `rw${i}`);
}

export function semKeys(scope: PlanScope): string[] {
  return Array.from({ length: Math.max(1, Math.floor(scope.keys / 2)) }, (_, i) => `sem${i}`);
}

/** The next operation of one flow. */
export function nextOp(rng: Rng, scope: PlanScope): Op {
  const kind = rng.weighted([["mutex", 60], ["rw", 17], ["sem", 13], ["idle", 8], ["close", 2]] as const);
  const instance = rng.int(0, scope.instanceTtls.length - 1);
  if (kind === "idle") return { op: "idle", ms: rng.int(10, 300) };
  if (kind === "close") return { op: "close", instance, delayMs: rng.int(0, 400) };
  const target = pickTarget(rng, scope, kind);
  const acquire = pickAcquire(rng, target, scope, false);
  return { op: "section", section: { target, acquire, instance, steps: steps(rng, scope, target, acquire, instance, 0) } };
}

function pickTarget(rng: Rng, scope: PlanScope, kind: "mutex" | "rw" | "sem"): Target {
  const ttl = rng.chance(0.3) ? rng.int(300, 1500) : undefined;
  const withTtl = <T extends object>(t: T): T & { ttl?: number } => (ttl === undefined ? t : { ...t, ttl });
  if (kind === "mutex") return withTtl({ prim: "mutex" as const, key: rng.pick(mutexKeys(scope)), fair: rng.chance(0.15) });
  if (kind === "rw") return withTtl({ prim: rng.chance(0.55) ? "read" as const : "write" as const, key: rng.pick(rwKeys(scope)) });
  const index = rng.int(0, semKeys(scope).length - 1);
  return withTtl({ prim: "sem" as const, key: `sem${index}`, permits: permitsOf(index) });
}

/** An explicit owner shared on purpose (across flows and workers) by a few acquisitions. */
const sharedOwner = (rng: Rng, key: string): string => `own-${key}-${rng.int(0, 1)}`;

function pickAcquire(rng: Rng, target: Target, scope: PlanScope, nested: boolean): AcquireHow {
  const owner = target.prim === "mutex" && rng.chance(nested ? 0 : 0.1) ? sharedOwner(rng, target.key) : undefined;
  const how = rng.weighted([["withLock", 55], ["acquire", 30], ["tryAcquire", 15]] as const);
  const end = rng.weighted([["release", 75], ["release-twice", 15], ["dispose", 10]] as const);
  const ownerPart = owner === undefined ? {} : { owner };
  if (how === "tryAcquire") return { how, end, ...ownerPart };
  // Timeouts from 0 (one attempt) to a few ttls; sometimes a signal instead, sometimes neither.
  const ttl = scope.instanceTtls[0] ?? 1000;
  const wait = rng.weighted([["timeout", 60], ["signal", 20], ["both", 10], ["forever", 10]] as const);
  const timeout = wait === "timeout" || wait === "both" ? rng.weighted([[0, 15], [rng.int(20, 400), 35], [rng.int(400, 4 * ttl), 50]] as const) : undefined;
  const signalMs = wait === "signal" || wait === "both" ? rng.int(50, 4 * ttl) : undefined;
  const waitPart = { ...(timeout !== undefined && { timeout }), ...(signalMs !== undefined && { signalMs }) };
  return how === "withLock" ? { how, ...waitPart, ...ownerPart } : { how, end, ...waitPart, ...ownerPart };
}

function steps(rng: Rng, scope: PlanScope, target: Target, acquire: AcquireHow, instance: number, depth: number): Step[] {
  const ttl = target.ttl ?? scope.instanceTtls[instance] ?? 1000;
  const out: Step[] = [];
  const count = rng.int(1, depth === 0 ? 6 : 3);
  const exclusive = target.prim === "mutex" || target.prim === "write";
  for (let i = 0; i < count; i++) {
    const step = rng.weighted([
      ["work", 30], ["counter", exclusive ? 14 : 0], ["guard", target.prim === "mutex" && scope.deployment !== "quorum" ? 10 : 0],
      ["extend", 10], ["isHeld", 5], ["nest", depth < MAX_DEPTH ? 12 : 0], ["fork", depth < MAX_DEPTH ? 5 : 0],
      ["later", depth < MAX_DEPTH && target.prim === "mutex" ? 7 : 0], ["foreign", target.prim === "mutex" ? 3 : 0],
    ] as const);
    switch (step) {
      case "work":
        // Mostly under a third of the ttl; sometimes long enough for the watchdog to renew.
        out.push({ do: "work", ms: rng.chance(0.75) ? rng.int(0, Math.floor(ttl / 2)) : rng.int(ttl / 2, 2 * ttl) });
        break;
      case "counter":
        out.push({ do: "counter", gapMs: rng.chance(0.5) ? 0 : rng.int(1, 50) });
        break;
      case "guard":
        out.push({ do: "guard" });
        break;
      case "extend": {
        const choice = rng.weighted([["same", 30], ["short", 50], ["long", 20]] as const);
        if (choice === "same") out.push({ do: "extend" });
        else out.push({ do: "extend", ttl: choice === "short" ? rng.int(300, 1500) : rng.int(5_000, 15_000) });
        break;
      }
      case "isHeld":
        out.push({ do: "isHeld" });
        break;
      case "nest":
        out.push({ do: "nest", section: inner(rng, scope, target, acquire, instance, depth + 1, false) });
        break;
      case "fork":
        out.push({ do: "fork", branches: [0, 1].map(() => inner(rng, scope, target, acquire, instance, depth + 1, false)) });
        break;
      case "later": {
        const jobs = rng.chance(0.8) ? 2 : 1;
        out.push({
          do: "later", via: rng.chance(0.8) ? "timeout" : "immediate", delayMs: rng.int(0, 2 * ttl),
          jobs: Array.from({ length: jobs }, () => inner(rng, scope, target, acquire, instance, depth + 1, true)),
        });
        break;
      }
      case "foreign":
        out.push({ do: "foreign" });
        break;
    }
  }
  // Work after nested sections: the outer section must outlive what its children did.
  if (out.some((s) => s.do === "nest" || s.do === "fork")) out.push({ do: "work", ms: rng.int(ttl / 3, ttl) });
  return out;
}

/**
 * A nested section on the same lock. Inside a withLock (or with the outer's explicit owner) a
 * mutex or write lock re-enters; where it cannot (an acquire() without owner has no async
 * context; a read or a permit takes a hold of its own) it gets a short timeout, as it may wait
 * for its own outer section. Late jobs re-enter through the context they were scheduled in.
 */
function inner(rng: Rng, scope: PlanScope, outer: Target, outerHow: AcquireHow, instance: number, depth: number, late: boolean): Section {
  let target: Target = outer;
  if (outer.prim === "write" && rng.chance(0.5)) target = { ...outer, prim: "read" };
  const reenters = (outer.prim === "mutex" || outer.prim === "write") && target.prim === outer.prim &&
    (outerHow.how === "withLock" || outerHow.owner !== undefined);
  const readInWrite = outer.prim === "write" && target.prim === "read" && outerHow.how === "withLock";
  const owner = outerHow.owner !== undefined && target.prim === outer.prim ? { owner: outerHow.owner } : {};
  const how = rng.weighted([["withLock", 70], ["acquire", 30]] as const);
  const end = rng.weighted([["release", 80], ["release-twice", 10], ["dispose", 10]] as const);
  // Late jobs wait like anyone (their section is over); the rest may only wait for their own outer.
  const timeout = late
    ? rng.weighted([[0, 40], [rng.int(100, 2_000), 60]] as const)
    : reenters || readInWrite ? (rng.chance(0.5) ? undefined : rng.int(500, 2_000)) : rng.int(0, 150);
  const waitPart = timeout === undefined ? {} : { timeout };
  const acquire: AcquireHow = how === "withLock" ? { how, ...waitPart, ...owner } : { how, end, ...waitPart, ...owner };
  return { target, acquire, instance, steps: steps(rng, scope, target, acquire, instance, depth) };
}

/**
 * Turns some mutex operations into multiLocks of their key and another (issue 24: owner joins
 * across a multiLock and a mutex of its keys; the shared owners are per first key, so a mutex of
 * k0 and a multiLock of [k0, k2] with one owner join each other's hold). Drawn from a PRNG of its
 * own after `nextOp`, so the operations a seed recorded before it plans stay the same. Not in a
 * Cluster, where the keys of a multiLock must share a slot.
 */
export function widen(op: Op, rng: Rng, scope: PlanScope): Op {
  const keys = mutexKeys(scope);
  if (scope.deployment === "cluster" || keys.length < 2 || !rng.chance(0.25)) return op;
  if (op.op !== "section" || op.section.target.prim !== "mutex") return op;
  const key = op.section.target.key;
  const other = rng.pick(keys.filter((k) => k !== key));
  return { op: "section", section: withKey(op.section, key, other) };
}

/** The section and every nested one on the mutex `key`, as multiLocks of `key` and `other`. */
function withKey(s: Section, key: string, other: string): Section {
  const target: Target = s.target.prim === "mutex" && s.target.key === key ? { ...s.target, with: other } : s.target;
  const steps = s.steps.map((step): Step => {
    switch (step.do) {
      case "nest": return { ...step, section: withKey(step.section, key, other) };
      case "fork": return { ...step, branches: step.branches.map((b) => withKey(b, key, other)) };
      case "later": return { ...step, jobs: step.jobs.map((j) => withKey(j, key, other)) };
      default: return step;
    }
  });
  return { ...s, target, steps };
}

/**
 * Owner joins across a multiLock and a mutex of its first key (issue 24, overlap 2): some
 * top-level sections on a mutex key `k` take the one owner `own-k-0`; a multiLock among them
 * (from `widen`) is of `k` and the key after it, always the same pair, so that one founded in one
 * process is joined by the same multiLock in others and by a mutex of `k`; such a mutex often
 * extends its hold at once to a few seconds, so that `k` outlives the pair's other key by far
 * while a joiner learns of both. Drawn from a PRNG of its own after `widen`, so what the other
 * PRNGs plan stays the same.
 */
export function joinAcross(op: Op, rng: Rng, scope: PlanScope): Op {
  if (op.op !== "section" || op.section.target.prim !== "mutex" || op.section.acquire.owner !== undefined) return op;
  const s = op.section;
  const key = s.target.key;
  const multi = s.target.prim === "mutex" && s.target.with !== undefined;
  if (!rng.chance(multi ? 0.6 : 0.3)) return op;
  const acquire: AcquireHow = { ...s.acquire, owner: `own-${key}-0` };
  if (multi) {
    // A multiLock founds its hold only with both keys free at once, which the mutex traffic on
    // them rarely leaves (most timed out): it waits long, and the others then join at once.
    if (acquire.how !== "tryAcquire") Object.assign(acquire, { timeout: rng.int(3_000, 8_000) });
    const keys = mutexKeys(scope);
    const partner = keys[(keys.indexOf(key) + 1) % keys.length] as string;
    const joined = withKey(s, key, partner);
    // Half of them stay a while: a joiner that outlives the hold's founder keeps the pair alone.
    const steps: readonly Step[] = rng.chance(0.5) ? [...joined.steps, { do: "work", ms: rng.int(1_000, 3_000) }] : joined.steps;
    return { op: "section", section: { ...joined, acquire, steps } };
  }
  const steps: readonly Step[] = rng.chance(0.6) ? [{ do: "extend", ttl: rng.int(3_000, 8_000) }, ...s.steps] : s.steps;
  return { op: "section", section: { ...s, acquire, steps } };
}
