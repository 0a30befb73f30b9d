/**
 * The etcd store: surelock's locks, elections and latches on an etcd cluster, through the `etcd3`
 * client. `new Surelock({ etcd })` runs on it through the named-store engine (src/named/).
 */
export { EtcdStore, type EtcdStoreOptions } from "./store.js";
export type {
  AcquireRequest, Bounds, Capabilities, Feature, Held, HolderInfo, HoldRef, LatchState, LeaderInfo, LockInfo, LockMode, NamedLockStore, ReleaseResult, Reentry,
} from "./types.js";
