/**
 * What Redis holds for one user key, read in one MULTI so the picture is consistent: the mutex
 * holder and its fair queue, the read-write lock's writer, readers and waiting writer, and the
 * semaphore's holders. Shared by `inspect`, `release` and `exec` (to name who holds a lock).
 */
import type { Cluster, Redis } from "ioredis";
import type { KeySpace } from "../keys.js";

/** The holder of a mutex or of a read-write lock's write side. */
export interface Holder {
  readonly owner: string;
  /** How many times the owner has entered it (re-entries). */
  readonly entries: number;
  /** Decimal string: tokens can exceed JSON's safe integers. */
  readonly fencingToken: string;
  /** Time left on the lease in ms (-1: no expiry, which surelock never leaves). */
  readonly pttlMs: number;
}

/** One semaphore permit or read lock. */
export interface SharedHolder {
  /** The member in the zset: `<owner>:<acquisition id>`. */
  readonly member: string;
  readonly owner: string;
  readonly expiresInMs: number;
}

/**
 * One ticket in a lock's queue in Redis, head first: a waiter of a fair lock, or one process's
 * line of local waiters otherwise.
 */
export interface QueuedWaiter {
  readonly ticket: string;
  /** Time before the ticket is dropped unless its waiter refreshes it. */
  readonly expiresInMs: number;
}

export interface MutexState {
  readonly holder: Holder | null;
  readonly queue: readonly QueuedWaiter[];
}

export interface ReadWriteState {
  readonly writer: Holder | null;
  readonly readers: readonly SharedHolder[];
  /** A refused writer holds new readers back for a moment. */
  readonly writerWaiting: { readonly owner: string; readonly pttlMs: number } | null;
  readonly queue: readonly QueuedWaiter[];
}

export interface SemaphoreState {
  readonly holders: readonly SharedHolder[];
  readonly queue: readonly QueuedWaiter[];
}

/** Each part is null when Redis holds nothing of it. */
export interface LockState {
  readonly mutex: MutexState | null;
  readonly rw: ReadWriteState | null;
  readonly semaphore: SemaphoreState | null;
}

/** True when anything holds or waits for the key. */
export function isLocked(state: LockState): boolean {
  return state.mutex !== null || state.rw !== null || state.semaphore !== null;
}

/** Reads the state of `key` (every kind of lock) from one deployment. */
export async function readLockState(client: Redis | Cluster, keys: KeySpace, key: string): Promise<LockState> {
  const m = keys.of(key);
  const rw = keys.of(key, "rw");
  const sem = keys.of(key, "sem");
  // Every name carries the same hash tag, so this MULTI is one slot in a Cluster too.
  const replies = await client
    .multi()
    .time()
    .hmget(m.lock, "o", "n", "t")
    .pttl(m.lock)
    .lrange(m.queue, 0, -1)
    .zrange(m.deadlines, 0, -1, "WITHSCORES")
    .hmget(rw.lock, "o", "n", "t")
    .pttl(rw.lock)
    .zrange(rw.shared, 0, -1, "WITHSCORES")
    .get(rw.mark)
    .pttl(rw.mark)
    .lrange(rw.queue, 0, -1)
    .zrange(rw.deadlines, 0, -1, "WITHSCORES")
    .zrange(sem.shared, 0, -1, "WITHSCORES")
    .lrange(sem.queue, 0, -1)
    .zrange(sem.deadlines, 0, -1, "WITHSCORES")
    .exec();
  const [time, mHolder, mPttl, mQueue, mDeadlines, rwHolder, rwPttl, readers, mark, markPttl, rwQueue, rwDeadlines,
    permits, semQueue, semDeadlines] = results(replies, 15);
  const nowMs = serverMs(time);

  const holder = toHolder(mHolder, mPttl);
  const mWaiting = toQueue(mQueue, mDeadlines, nowMs);

  const writer = toHolder(rwHolder, rwPttl);
  const liveReaders = toShared(readers, nowMs);
  const writerWaiting = typeof mark === "string" ? { owner: mark, pttlMs: Number(markPttl) } : null;
  const rwWaiting = toQueue(rwQueue, rwDeadlines, nowMs);

  const holders = toShared(permits, nowMs);
  const semWaiting = toQueue(semQueue, semDeadlines, nowMs);
  return {
    mutex: holder || mWaiting.length > 0 ? { holder, queue: mWaiting } : null,
    rw: writer || liveReaders.length > 0 || writerWaiting || rwWaiting.length > 0
      ? { writer, readers: liveReaders, writerWaiting, queue: rwWaiting }
      : null,
    semaphore: holders.length > 0 || semWaiting.length > 0 ? { holders, queue: semWaiting } : null,
  };
}

/** The owner part of a shared member `<owner>:<instance>:<n>`. */
export function ownerOfMember(member: string): string {
  const parts = member.split(":");
  return parts.length > 2 ? parts.slice(0, -2).join(":") : member;
}

/** Milliseconds of a TIME reply. */
export function serverMs(time: unknown): number {
  const [s, us] = time as [string, string];
  return Number(s) * 1_000 + Math.floor(Number(us) / 1_000);
}

/** The replies of a MULTI or pipeline, throwing the first error. */
export function results(replies: [Error | null, unknown][] | null, expected: number): unknown[] {
  if (!replies || replies.length !== expected) throw new Error("the transaction was aborted by the server");
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** A holder hash's HMGET o n t reply and PTTL, as a Holder (null if the hash is absent). */
export function toHolder(fields: unknown, pttl: unknown): Holder | null {
  const [owner, entries, token] = fields as (string | null)[];
  if (owner === null || owner === undefined) return null;
  return { owner, entries: Number(entries ?? 0), fencingToken: token ?? "", pttlMs: Number(pttl) };
}

/** Live members of a `ZRANGE ... WITHSCORES` reply of member -> deadline (server ms). */
export function toShared(reply: unknown, nowMs: number): SharedHolder[] {
  const out: SharedHolder[] = [];
  const flat = reply as string[];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = flat[i] as string;
    const deadline = Number(flat[i + 1]);
    // A lapsed member counts for nothing, even before a script prunes it.
    if (deadline > nowMs) out.push({ member, owner: ownerOfMember(member), expiresInMs: deadline - nowMs });
  }
  return out;
}

/** The live tickets of a queue (list, head first) and its deadlines (zset ticket -> server ms). */
function toQueue(list: unknown, deadlines: unknown, nowMs: number): QueuedWaiter[] {
  const flat = deadlines as string[];
  const until = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) until.set(flat[i] as string, Number(flat[i + 1]));
  // A ticket past its deadline is dropped by the next attempt: it no longer holds anyone back.
  return (list as string[]).flatMap((ticket) => {
    const deadline = until.get(ticket) ?? 0;
    return deadline > nowMs ? [{ ticket, expiresInMs: deadline - nowMs }] : [];
  });
}
