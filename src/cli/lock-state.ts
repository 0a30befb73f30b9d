/**
 * What Redis holds for one user key, read by the package's `inspectKey` (src/admin.ts): the mutex's holder
 * and queue, the read-write lock's and the semaphore's holds and queues, the election and the
 * countdown latch of that name. Shared by `inspect`, `list`, `leader` and `exec` (to name who
 * holds a lock).
 */
import type { Cluster, Redis } from "ioredis";
import { inspectKey, type KeyState } from "../index.js";
import type { KeySpace } from "../keys.js";

export type {
  InspectedCandidate as Candidate, InspectedLeader as ElectionHolder, InspectedElection as ElectionState, InspectedHolder as Holder,
  InspectedLatch as LatchState, KeyState as LockState, InspectedMutex as MutexState, InspectedWaiter as QueuedWaiter,
  InspectedSharedHolder as SharedHolder, InspectedShared as SharedState,
} from "../index.js";

/** True when anything holds or waits for the key (a latch holds nothing). */
export function isLocked(state: KeyState): boolean {
  return state.mutex !== null || state.rw !== null || state.semaphore !== null || state.election !== null;
}

/** Reads the state of `key` (every kind of lock) from one deployment. */
export function readLockState(client: Redis | Cluster, keys: KeySpace, key: string): Promise<KeyState> {
  return inspectKey(client, key, { prefix: keys.prefix });
}
