/** surelock: distributed locks on Redis. Exports only; see the README and docs/. */
export { Surelock } from "./surelock.js";
export type { SurelockOptions, RedisClient, Clock, PostgresOptions, PostgresPool, EtcdClientLike, StoreKind } from "./surelock.js";
export type { IoredisClient, NodeRedisClient } from "./adapters/detect.js";
export { Lease } from "./lease/lease.js";
export { Mutex } from "./primitives/mutex.js";
export type { MutexOptions } from "./primitives/mutex.js";
export { MultiLock } from "./primitives/multi-lock.js";
export type { MultiLockOptions } from "./primitives/multi-lock.js";
export { Semaphore } from "./primitives/semaphore.js";
export type { SemaphoreOptions, SemaphoreAcquireOptions, SemaphoreTryAcquireOptions } from "./primitives/semaphore.js";
export { ReadWriteLock, ReadWriteSide } from "./primitives/read-write-lock.js";
export type { ReadWriteLockOptions } from "./primitives/read-write-lock.js";
export type { Lockable, AcquireOptions, TryAcquireOptions, WithLockOptions, LockedWork } from "./primitives/lock.js";
export { Election } from "./primitives/election.js";
export type { ElectionOptions, CampaignOptions, ObserveOptions } from "./primitives/election.js";
export type { Leader } from "./primitives/leader.js";
export { CountDownLatch } from "./primitives/latch.js";
export type { LatchOptions, CountDownOptions, LatchWaitOptions } from "./primitives/latch.js";
export { FencingGuard } from "./guard.js";
export type { GuardedWrite, GuardedCommit, FencingLease, TransactionClient } from "./guard.js";
export {
  SurelockError, LockTimeoutError, LockLostError, LockNotHeldError, QuorumError, InvalidArgumentError, ConnectionError,
  ScriptError, AuthError, UnsupportedError, DeadlockError, ConflictError, ClosedError, FencedError, SchemaError,
} from "./errors.js";
export type { LockLostReason, NodeOutcome } from "./errors.js";
export type { RedisAdapter, RedisSubscriber, RedisArg, ReplicaWait, AcknowledgedReply } from "./adapters/types.js";
export { inspectKey, forceRelease } from "./admin.js";
export type {
  AdminOptions, ForceReleaseOptions, ForceReleaseKind, ForcedHold, KeyState, InspectedMutex, InspectedHolder, InspectedWaiter,
  InspectedShared, InspectedSharedHolder, InspectedElection, InspectedLeader, InspectedCandidate, InspectedLatch,
} from "./admin.js";
export { channels } from "./diagnostics.js";
export type { AcquireMessage, ReleaseMessage, ExtendMessage, LostMessage, WaitMessage, ErrorMessage } from "./diagnostics.js";
export type { LeaderMessage, LatchMessage } from "./diagnostics.js";
