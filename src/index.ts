/** surelock: distributed locks on Redis. Exports only; see the README and docs/. */
export { Surelock } from "./surelock.js";
export type { SurelockOptions, RedisClient } from "./surelock.js";
export { Lease } from "./lease.js";
export { Mutex } from "./primitives/mutex.js";
export type { MutexOptions } from "./primitives/mutex.js";
export { Semaphore } from "./primitives/semaphore.js";
export type { SemaphoreOptions } from "./primitives/semaphore.js";
export { ReadWriteLock, ReadWriteSide } from "./primitives/read-write-lock.js";
export type { ReadWriteLockOptions } from "./primitives/read-write-lock.js";
export { Lockable } from "./primitives/lockable.js";
export type { AcquireOptions, TryAcquireOptions, WithLockOptions, LockedWork } from "./primitives/lockable.js";
export { FencingGuard } from "./guard.js";
export type { GuardedWrite } from "./guard.js";
export {
  SurelockError, LockTimeoutError, LockLostError, LockNotHeldError, QuorumError,
  InvalidArgumentError, ConnectionError, ClosedError,
} from "./errors.js";
export type { LockLostReason, NodeOutcome } from "./errors.js";
export type { RedisAdapter, RedisSubscriber, RedisArg, ReplicaWait, AcknowledgedReply } from "./adapters/types.js";
export { channels } from "./diagnostics.js";
export type {
  AcquireMessage, ReleaseMessage, ExtendMessage, LostMessage, WaitMessage, ErrorMessage,
} from "./diagnostics.js";
