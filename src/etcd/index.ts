/**
 * The etcd store: surelock's locks, elections and latches on an etcd cluster, through the `etcd3`
 * client. Not wired into `Surelock` yet: it plugs in behind the typed Store seam.
 */
export { EtcdStore, type EtcdStoreOptions } from "./store.js";
export type {
  AcquireRequest, Bounds, Capabilities, Feature, Held, HolderInfo, HoldRef, LatchState, LeaderInfo, LockInfo, LockMode, NamedLockStore, ReleaseResult, Reentry,
} from "./types.js";
