/**
 * Wrong answers: calls that told the caller something false. A release that reports the lease
 * lost although the holder saw it held right before releasing, nobody else took the lock, and no
 * fault could have delayed a renewal or dropped the lock meanwhile (so the lease was far from the
 * end of its validity): the hold was gone because something removed it (a replay of the release
 * itself), not because it was lost. The holder is told its section may not have been exclusive
 * when it was.
 */
import { lockOf, lockOfRedisKey, type Model } from "./model.js";
import { brokenAssumption, type Violation } from "./violation.js";

export function checkAnswers(model: Model): Violation[] {
  const out: Violation[] = [];
  for (const c of model.calls.values()) {
    if (c.outcome !== "fail" || c.error?.code !== "ERR_SURELOCK_LOCK_LOST") continue;
    if (c.invoke.op !== "release" && c.invoke.op !== "withLock") continue;
    const lease = model.leases.get(c.invoke.op === "release" ? c.invoke.lease ?? "" : c.lease ?? "");
    const done = c.doneAt;
    // The holder's last look as its section ended must have seen it held: otherwise the answer
    // only repeats what the holder knew. That look and the release are one step apart (no timer
    // in between), so the release found its validity intact and the loss came from Redis's reply.
    if (!lease || done === undefined || !lease.endLook?.held) continue;
    if (c.invoke.op === "release" && c.invoke.args?.nth !== 1) continue;
    const lock = lockOf(lease.prim, lease.key);
    const others = [...model.leases.values()].some((l) =>
      lockOf(l.prim, l.key) === lock && l.id !== lease.id && !(l.owner === lease.owner && l.token === lease.token) &&
      l.start >= lease.start && l.start <= done && l.prim !== "read" && l.prim !== "sem");
    if (others) continue; // someone else came in: the lease really was lost (an overlap, if anything)
    const from = done - lease.ttl;
    const delayed = model.faults.some((f) =>
      f.fault !== "cut" && !(f.fault === "pause-worker" && f.target !== `worker${lease.worker}`) && f.to >= from && f.from <= done);
    if (delayed || brokenAssumption(model, lease.start, done)) continue;
    const replayed = model.cuts.some((cut) => {
      const key = cut.detail?.key;
      return /release/.test(String(cut.detail?.script ?? "")) && typeof key === "string" && lockOfRedisKey(key) === lock &&
        cut.t >= lease.start - 1 && cut.t <= done;
    });
    out.push({
      checker: "wrong-answer", severity: "violation", lock, leases: [lease.id], window: [c.invoke.t, done],
      // A job that outlived its section holds a second copy of the hold (see outlived-section).
      patterns: [lease.late ? "outlived-section" : replayed ? "replayed-release" : "unexplained"],
      message: `${c.invoke.op} of ${lease.id} (${lock}, token ${lease.token}) rejected with LockLostError ` +
        `(${c.error.reason ?? "?"}: ${c.error.message}) although nobody else took the lock and no fault delayed it` +
        (replayed ? "; a release of this lock had its reply cut and was replayed" : ""),
    });
  }
  return out;
}
