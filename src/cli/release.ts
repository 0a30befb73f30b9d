/**
 * `surelock release KEY --force`: deletes a lock that its holder will not give back (a crashed
 * machine, a stuck process) and wakes its waiters. The holder is not told: it learns at its next
 * renewal, up to a third of its ttl later, and until then two processes may believe they hold
 * the lock. That is why it takes --force.
 */
import { KeySpace } from "../keys.js";
import { forceRelease as forceReleaseOn, type ForcedHold } from "../index.js";
import { onNode, perNode, type Deployment, type RedisAddress } from "./connection.js";
import { UsageError } from "./exit-codes.js";
import { readLockState } from "./lock-state.js";
import { exitCodeOf, withReachable } from "./one-shot.js";
import { note, plural, print, quote } from "./output.js";

/** Which lock of the key: `mutex` (default), `rw` (both sides of a read-write lock), `semaphore`. */
export type ReleaseKind = "mutex" | "rw" | "semaphore";
export const RELEASE_KINDS: readonly ReleaseKind[] = ["mutex", "rw", "semaphore"];

export interface ReleaseOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  readonly key: string;
  readonly kind: ReleaseKind;
  readonly force: boolean;
}

export async function release(o: ReleaseOptions): Promise<number> {
  if (!o.force) {
    throw new UsageError(
      `refusing to release ${quote(o.key)} without --force: its holder is not told and keeps working until its next ` +
        `renewal fails, so for a while two processes would hold the lock; check it with "surelock inspect ${o.key}", ` +
        `then add --force if the holder is dead or stuck`,
    );
  }
  return withReachable(o.addresses, async (reached) => {
    const keys = new KeySpace(o.prefix);
    const what = o.kind === "rw" ? "read-write lock" : o.kind;
    const outcomes = await perNode(o.addresses, reached, `releasing ${quote(o.key)}`, (d) => forceRelease(d, keys, o));
    for (const [i, outcome] of outcomes.entries()) {
      const holds = outcome.value;
      if (!holds) continue;
      const where = `${what} ${quote(o.key)} on ${outcome.node}`;
      if (holds.length > 0) {
        // "held by X (1 entry), fencing token T" / "held by 2 readers" / "held by 3 permit holders"
        const readers = holds.filter((h) => h.mode === "r").length;
        const permits = holds.filter((h) => h.mode === "s").length;
        const parts = [
          ...holds.filter((h) => h.mode === undefined || h.mode === "w")
            .map((h) => `${h.owner} (${plural(h.entries, "entry", "entries")}), fencing token ${h.fencingToken}`),
          ...(readers > 0 ? [plural(readers, "reader")] : []),
          ...(permits > 0 ? [plural(permits, "permit holder")] : []),
        ];
        print(`released ${where}: it was held by ${parts.join(", and by ")}; waiters were woken`);
      } else {
        print(`${where} was not held: nothing released`);
        const d = reached.deployments.find((x) => x.address === o.addresses[i]);
        if (d) await hintOtherKinds(d, keys, o).catch(() => {});
      }
    }
    return exitCodeOf(outcomes, " (nothing was released there; it expires after its ttl)");
  });
}

/** Ends every hold of the lock and wakes its waiters, in one script (the package's `forceRelease`). */
function forceRelease(d: Deployment, keys: KeySpace, o: ReleaseOptions): Promise<ForcedHold[]> {
  return forceReleaseOn(d.client, o.key, { prefix: keys.prefix, kind: o.kind });
}

/** Nothing was released: say so if the key is held as another kind of lock. */
async function hintOtherKinds(d: Deployment, keys: KeySpace, o: ReleaseOptions): Promise<void> {
  const state = await onNode(d, `reading ${quote(o.key)}`, () => readLockState(d.client, keys, o.key));
  const held: ReleaseKind[] = [];
  if (state.mutex?.holder) held.push("mutex");
  if (state.rw && state.rw.holders.length > 0) held.push("rw");
  if (state.semaphore) held.push("semaphore");
  for (const kind of held.filter((k) => k !== o.kind)) {
    note(`${quote(o.key)} is held as a ${kind === "rw" ? "read-write lock" : kind}: use --kind ${kind} to release that`);
  }
}
