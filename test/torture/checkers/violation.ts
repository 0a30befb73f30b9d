/**
 * What a checker reports, and how a report is classified: a violation of the protocol, or a
 * consequence of a documented assumption the run broke on purpose (a server that forgot its data
 * on restart, a failover of asynchronous replicas). The second kind is reported, not failed.
 */
import { lockOf, lockOfRedisKey, type LeaseRecord, type Model } from "./model.js";

export type CheckerName =
  | "believed-overlap" | "reentry-token" | "semaphore" | "read-write" | "fenced-register" | "counter"
  | "liveness" | "hygiene" | "wrong-answer";

export type Severity =
  /** The protocol broke a promise: the run fails. */
  | "violation"
  /** Happened while a documented assumption was broken (see `assumption`): reported only. */
  | "assumption-broken"
  /** Not exclusive, but the holder was told (its lease was lost and it saw that): reported only. */
  | "acknowledged";

/**
 * Which known failure a violation looks like, from what the history shows (a heuristic: the
 * minimal history is the evidence). outlived-section: a job scheduled in a section re-entered
 * after it ended; extend-race: extend() ran while a watchdog renewal was in flight;
 * replayed-release: a release of the lock had its reply cut (and was resent);
 * reentry-new-token: a nested acquisition came back with another token than its outer hold
 * (in quorum mode: a node that missed the first acquire granted a fresh one);
 * acquired-during-close: an acquisition resolved after close() of its Surelock had begun (close
 * released the hold, nothing renews the new lease); resent-command: a connection was dropped
 * (reset, restart, cut of an acquire) while the earlier hold was taken.
 */
export type Pattern =
  | "outlived-section" | "extend-race" | "replayed-release" | "reentry-new-token" | "acquired-during-close"
  | "resent-command" | "replayed-write" | "unexplained";

export interface Violation {
  readonly checker: CheckerName;
  readonly severity: Severity;
  readonly message: string;
  /** The lock or resource, e.g. `mutex:k0`. */
  readonly lock?: string;
  readonly leases?: readonly string[];
  /** Where it happened, in ms since the run's start. */
  readonly window?: readonly [number, number];
  readonly assumption?: string;
  readonly patterns?: readonly Pattern[];
}

const DATA_LOSS_TAIL_MS = 5_000;

/** How far back a data-losing fault can still explain a violation: the longest lease in use. */
export function lookbackMs(model: Model): number {
  let longest = 1_500;
  for (const l of model.leases.values()) longest = Math.max(longest, l.ttl);
  for (const c of model.calls.values()) {
    const ttl = c.invoke.op === "extend" ? c.invoke.args?.ttl : undefined;
    if (typeof ttl === "number") longest = Math.max(longest, ttl);
  }
  return longest;
}

/**
 * The documented assumption broken within [from, to], if any: a server that lost acknowledged
 * writes (restart without persistence, failover with asynchronous replication) can hand a lock
 * to a second owner while the first still rightly trusts its lease. Callers pass the span in
 * which such a loss would explain what they found: for an overlap, from the first hold's
 * acquisition to the second's; for a lost counter update, between the two writes.
 */
export function brokenAssumption(model: Model, from: number, to: number): string | undefined {
  for (const f of model.faults) {
    if (!f.dataLoss) continue;
    // A demoted primary keeps acknowledging writes until Sentinel reconfigures it (its failover
    // timeout in the test topology is 5 s): those are lost as well.
    if (f.to + DATA_LOSS_TAIL_MS >= from && f.from <= to) {
      return f.fault === "failover"
        ? `Sentinel failover at ${f.from.toFixed(0)} ms (replication is asynchronous: the new primary may lack the lock)`
        : `${f.target} restarted without persistence at ${f.to.toFixed(0)} ms (it forgot its locks)`;
    }
  }
  return undefined;
}

/**
 * Which known failure an overlap looks like, from what the history shows around the lease that
 * should have been over (`stale`) and the one that came in (`fresh`).
 */
export function patternsOf(model: Model, stale: LeaseRecord, fresh: LeaseRecord): Pattern[] {
  const out = leasePatterns(model, stale, fresh.start);
  if (fresh.late && !out.includes("outlived-section")) out.unshift("outlived-section");
  if (out.length > 1) return out.filter((p) => p !== "unexplained");
  return out;
}

/** What happened to `lease`'s hold up to `until` that explains why it was not what it seemed. */
export function leasePatterns(model: Model, lease: LeaseRecord, until: number): Pattern[] {
  const out: Pattern[] = [];
  const lock = lockOf(lease.prim, lease.key);
  if (lease.late) out.push("outlived-section");
  const parent = lease.parent === undefined ? undefined : model.leases.get(lease.parent);
  const newToken = (child: LeaseRecord, outer: LeaseRecord): boolean =>
    !child.late && child.owner === outer.owner && child.token !== outer.token && lockOf(child.prim, child.key) === lock;
  if ((parent && newToken(lease, parent)) || [...model.leases.values()].some((l) => l.parent === lease.id && newToken(l, lease))) {
    out.push("reentry-new-token");
  }
  const closing = [...model.calls.values()].some((c) => c.invoke.op === "close" && c.worker === lease.worker &&
    c.invoke.args?.instance === lease.instance && c.invoke.t < lease.start && (c.doneAt === undefined || c.doneAt >= lease.start - 50));
  if (closing) out.push("acquired-during-close");
  const replayed = model.cuts.some((c) => {
    const key = c.detail?.key;
    return /release/.test(String(c.detail?.script ?? "")) && typeof key === "string" && lockOfRedisKey(key) === lock &&
      c.t >= lease.start - 1 && c.t <= until;
  });
  if (replayed) out.push("replayed-release");
  // extend() on the hold while the watchdog's renewal of it was on the wire: the renewal's
  // confirmation lands within one round trip (the extend's own) of the extend's call or reply.
  const raced = [...model.calls.values()].some((c) => {
    if (c.invoke.op !== "extend" || c.invoke.lease === undefined || !sameHold(model, c.invoke.lease, lease)) return false;
    if (c.invoke.t < lease.start || c.invoke.t > until || c.doneAt === undefined || c.outcome !== "ok") return false;
    const from = c.invoke.t - 1;
    const to = c.doneAt + (c.doneAt - c.invoke.t) + 5;
    return model.events.some((e) => e.type === "renew" && e.automatic && e.w === lease.worker && e.key === lease.key &&
      e.token === lease.token && e.t >= from && e.t <= to);
  });
  if (raced) out.push("extend-race");
  const dropped = model.faults.some((f) =>
    (f.fault === "reset" || f.fault === "kill-node" || (f.fault === "blackhole" && f.detail?.heal === "reset") ||
      (f.fault === "cut" && /acquire/.test(String(f.detail?.classes ?? "")))) &&
    f.to >= lease.start - 2_000 && f.from <= until);
  if (dropped && out.length === 0) out.push("resent-command");
  if (out.length === 0) out.push("unexplained");
  return out;
}

/** The longest ttl `lease`'s hold was given before `until` (its own, or an extend()'s). */
export function longestTtl(model: Model, lease: LeaseRecord, until: number): number {
  let ttl = lease.ttl;
  for (const c of model.calls.values()) {
    const asked = c.invoke.args?.ttl;
    if (c.invoke.op === "extend" && typeof asked === "number" && c.invoke.t <= until && c.invoke.lease !== undefined &&
      sameHold(model, c.invoke.lease, lease)) ttl = Math.max(ttl, asked);
  }
  return ttl;
}

/** Whether lease `id` stands on the same hold as `lease` (same owner and token on the same lock). */
function sameHold(model: Model, id: string, lease: LeaseRecord): boolean {
  const other = model.leases.get(id);
  return other !== undefined && other.key === lease.key && other.prim === lease.prim &&
    other.owner === lease.owner && other.token === lease.token;
}
