/**
 * Wrong answers: calls that told the caller something false. A release that reports the lease
 * lost although the holder saw it held right before releasing, nobody else took the lock, and no
 * fault could have delayed a renewal or dropped the lock meanwhile (so the lease was far from the
 * end of its validity): the hold was gone because something removed it (a replay of the release
 * itself), not because it was lost. The holder is told its section may not have been exclusive
 * when it was.
 */
import { lockOf, type Model } from "./model.js";
import { brokenAssumption, leasePatterns, longestTtl, type Violation } from "./violation.js";

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
    const from = done - longestTtl(model, lease, done);
    const delayed = model.faults.some((f) =>
      f.fault !== "cut" && !(f.fault === "pause-worker" && f.target !== `worker${lease.worker}`) && f.to >= from && f.from <= done);
    if (delayed || brokenAssumption(model, lease.start, done)) continue;
    const patterns = leasePatterns(model, lease, done);
    out.push({
      checker: "wrong-answer", severity: "violation", lock, leases: [lease.id], window: [c.invoke.t, done], patterns,
      message: `${c.invoke.op} of ${lease.id} (${lock}, token ${lease.token}) rejected with LockLostError ` +
        `(${c.error.reason ?? "?"}: ${c.error.message}) right after its holder saw it held, with nobody else in and no ` +
        "fault that could delay it: either the release was answered wrongly (a replay of it ran first) or the lease " +
        "was trusted while Redis had already freed it",
    });
  }
  return out.concat(checkSignals(model));
}

/** How long after its signal aborted an acquisition may still hand out a lease (one turn of the loop, generously). */
const SIGNAL_GRACE_MS = 100;

/**
 * An acquisition whose caller's signal aborted must reject with the signal's reason; handing out
 * a lease well after the abort is a wrong answer (the caller gave up; it may not even look).
 */
function checkSignals(model: Model): Violation[] {
  const out: Violation[] = [];
  for (const e of model.events) {
    if (e.type !== "signal") continue;
    const c = model.calls.get(e.call);
    if (!c || c.leaseAt === undefined || c.leaseAt - e.t <= SIGNAL_GRACE_MS) continue;
    const lease = c.lease === undefined ? undefined : model.leases.get(c.lease);
    out.push({
      checker: "wrong-answer", severity: "violation", window: [e.t, c.leaseAt],
      ...(lease && { lock: lockOf(lease.prim, lease.key), leases: [lease.id] }),
      message: `${c.invoke.op} (call ${c.id}, worker ${c.worker}) handed out a lease ${(c.leaseAt - e.t).toFixed(0)} ms ` +
        `after its caller's signal aborted, instead of rejecting with the signal's reason`,
    });
  }
  return out;
}
