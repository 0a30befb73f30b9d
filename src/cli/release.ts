/**
 * `surelock release KEY --force`: deletes a lock that its holder will not give back (a crashed
 * machine, a stuck process) and wakes its waiters. The holder is not told: it learns at its next
 * renewal, up to a third of its ttl later, and until then two processes may believe they hold
 * the lock. That is why it takes --force.
 */
import type { ChainableCommander } from "ioredis";
import { KeySpace, type LockKeys } from "../keys.js";
import { CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, onNode, perNode, type Deployment, type RedisAddress } from "./connection.js";
import { ExitCode, UsageError } from "./exit-codes.js";
import { formatDuration } from "./duration.js";
import { readLockState, results, serverMs, toHolder, toShared, type Holder } from "./lock-state.js";
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

/** What one node held before the release. */
interface Released {
  readonly holder: Holder | null;
  readonly shared: number;
}

export async function release(o: ReleaseOptions): Promise<number> {
  if (!o.force) {
    throw new UsageError(
      `refusing to release ${quote(o.key)} without --force: its holder is not told and keeps working until its next ` +
        `renewal fails, so for a while two processes would hold the lock; check it with "surelock inspect ${o.key}", ` +
        `then add --force if the holder is dead or stuck`,
    );
  }
  const reached = await connectReachable(o.addresses, { reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  try {
    const keys = new KeySpace(o.prefix);
    const what = o.kind === "rw" ? "read-write lock" : o.kind;
    const outcomes = await perNode(o.addresses, reached, `releasing ${quote(o.key)}`, (d) => forceRelease(d, keys, o));
    for (const [i, outcome] of outcomes.entries()) {
      const before = outcome.value;
      if (!before) continue;
      const where = `${what} ${quote(o.key)} on ${outcome.node}`;
      if (before.holder || before.shared > 0) {
        // "held by X (...), and by 2 readers" / "held by 3 permit holders"
        const parts = [
          ...(before.holder ? [`${before.holder.owner} (${plural(before.holder.entries, "entry", "entries")}), fencing token ${before.holder.fencingToken}, with ${formatDuration(Math.max(0, before.holder.pttlMs))} left`] : []),
          ...(before.shared > 0 ? [plural(before.shared, o.kind === "rw" ? "reader" : "permit holder")] : []),
        ];
        print(`released ${where}: it was held by ${parts.join(", and by ")}; waiters were woken`);
      } else {
        print(`${where} was not held: nothing released`);
        const d = reached.deployments.find((x) => x.address === o.addresses[i]);
        if (d) await hintOtherKinds(d, keys, o).catch(() => {});
      }
    }
    const failed = outcomes.filter((n) => n.error !== undefined);
    for (const n of failed) note(`${n.error as string} (nothing was released there; it expires after its ttl)`);
    return failed.length > 0 ? ExitCode.unavailable : ExitCode.ok;
  } finally {
    await disconnectAll(reached.deployments);
  }
}

/** Reads what is held, deletes it and announces the release, in one MULTI. */
async function forceRelease(d: Deployment, keys: KeySpace, o: ReleaseOptions): Promise<Released> {
  const k = keys.of(o.key, o.kind === "mutex" ? "mutex" : o.kind === "rw" ? "rw" : "sem");
  const tx = d.client.multi().time();
  if (o.kind === "semaphore") {
    tx.zrange(k.shared, 0, -1, "WITHSCORES").del(k.shared);
  } else {
    tx.hmget(k.lock, "o", "n", "t").pttl(k.lock);
    // The write side of a read-write lock goes with its readers and its waiting writer's mark.
    if (o.kind === "rw") tx.zrange(k.shared, 0, -1, "WITHSCORES").del(k.lock, k.shared, k.mark);
    else tx.del(k.lock);
  }
  announce(tx, d, k);
  const replies = await tx.exec();
  const expected = o.kind === "semaphore" ? 4 : o.kind === "rw" ? 6 : 5;
  const [time, ...rest] = results(replies, expected);
  const nowMs = serverMs(time);
  if (o.kind === "semaphore") return { holder: null, shared: toShared(rest[0], nowMs).length };
  const holder = toHolder(rest[0], rest[1]);
  return { holder, shared: o.kind === "rw" ? toShared(rest[2], nowMs).length : 0 };
}

/** "*" wakes every waiter, fair ones included (the head of a fair queue then takes the lock). */
function announce(tx: ChainableCommander, d: Deployment, k: LockKeys): void {
  // The library listens with sharded pub/sub in a Cluster.
  if (d.cluster) tx.spublish(k.channel, "*");
  else tx.publish(k.channel, "*");
}

/** Nothing was released: say so if the key is held as another kind of lock. */
async function hintOtherKinds(d: Deployment, keys: KeySpace, o: ReleaseOptions): Promise<void> {
  const state = await onNode(d, `reading ${quote(o.key)}`, () => readLockState(d.client, keys, o.key));
  const held: ReleaseKind[] = [];
  if (state.mutex?.holder) held.push("mutex");
  if (state.rw && (state.rw.writer || state.rw.readers.length > 0)) held.push("rw");
  if (state.semaphore) held.push("semaphore");
  for (const kind of held.filter((k) => k !== o.kind)) {
    note(`${quote(o.key)} is held as a ${kind === "rw" ? "read-write lock" : kind}: use --kind ${kind} to release that`);
  }
}
