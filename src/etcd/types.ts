/**
 * The etcd store as the layers above will see it, once the library has a typed Store seam: locks
 * addressed by name, holds with an identity and a re-entry kind, typed coordination operations,
 * wake-ups and lease life owned by the store. Only types live here.
 */

/** How an acquisition relates to what the caller already holds. */
export type Reentry =
  /** A hold of its own, queued behind everyone there (fairness by creation revision). */
  | { readonly kind: "fresh" }
  /** One more entry on a hold of this store, by its id: never waits. */
  | { readonly kind: "hold"; readonly hold: string }
  /** One more entry on whatever hold `owner` has on the lock and holds now; a fresh hold when it has none. */
  | { readonly kind: "owner" };

/** What is asked for on one name. A mutex and a write lock exclude everyone; readers share. */
export type LockMode =
  | { readonly kind: "mutex" }
  | { readonly kind: "read" }
  | { readonly kind: "write" }
  /** `permits` of a semaphore of `limit` (every holder must agree on the limit). */
  | { readonly kind: "semaphore"; readonly limit: number; readonly permits: number };

export interface AcquireRequest {
  /** The lock's name (any well-formed string; "/" is safe). */
  readonly name: string;
  readonly mode: LockMode;
  /** The hold's id (unique across processes and time): its key's last segment. */
  readonly hold: string;
  /** This entry's id (the hold's id for a fresh acquisition). */
  readonly entry: string;
  readonly owner: string;
  readonly reentry: Reentry;
  /**
   * A lease of its own that nobody renews, for `leaseTimeMs`; absent: the instance's session lease,
   * kept alive by the watchdog.
   */
  readonly leaseTimeMs?: number;
  /** How long to wait for the lock: 0 is one attempt, Infinity no bound. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** What the store keeps for a hold, to release, extend and fence with it. */
export interface HoldRef {
  readonly name: string;
  readonly hold: string;
  /** The holder key (etcd key, UTF-8). */
  readonly key: string;
  /** The fencing token: the holder key's creation revision. */
  readonly token: bigint;
  readonly mode: LockMode;
  /** The etcd lease the key lives under (decimal). */
  readonly lease: string;
  /** Whether the lease is the instance's session (renewed by the watchdog) or the hold's own. */
  readonly leaseKind: "session" | "own";
}

export interface Held {
  /** `founded`: a new hold; `entered`: one more entry on a hold that was there. */
  readonly status: "founded" | "entered";
  readonly ref: HoldRef;
  /** Aborts (with a LockLostError) the moment the hold can no longer be trusted. */
  readonly signal: AbortSignal;
  /** Monotonic instant until which the hold is trusted, as of now. */
  heldUntil(): number;
}

export type ReleaseResult =
  /** Other entries remain: the hold is still held. */
  | { readonly status: "held" }
  /** The last entry left: the key is deleted. */
  | { readonly status: "freed" }
  /** The key was not there (expired, force-released) or is another hold's. */
  | { readonly status: "gone" };

/** One holder or waiter as `inspect` sees it. */
export interface HolderInfo {
  readonly hold: string;
  readonly owner: string;
  readonly mode: LockMode["kind"];
  readonly permits: number;
  readonly token: bigint;
  readonly entries: number;
  readonly lease: string;
  readonly holding: boolean;
}

export interface LockInfo {
  readonly name: string;
  /** Holders first, then waiters, in revision order. */
  readonly holders: readonly HolderInfo[];
  readonly waiters: readonly HolderInfo[];
  /** The store's revision the answer was read at. */
  readonly revision: bigint;
}

/** An election's leader as read from the store. */
export interface LeaderInfo {
  readonly hold: string;
  readonly owner: string;
  /** The last value proclaimed ("" before any). */
  readonly value: string;
  /** The leadership's fencing token (its creation revision). */
  readonly token: bigint;
}

export interface LatchState {
  /** Distinct ids counted down so far. */
  readonly counted: number;
  /** What is still missing to reach `count` (0: open). */
  readonly remaining: number;
  readonly revision: bigint;
}

/** What this store can do; the facade consults it and refuses the rest with UnsupportedError. */
export interface Capabilities {
  readonly store: "etcd";
  readonly reentry: readonly Reentry["kind"][];
  /** Waiters are served in order of their key's creation revision. */
  readonly fairness: "revision";
  readonly fencing: "create-revision";
  readonly readWrite: true;
  readonly semaphore: true;
  readonly multi: true;
  readonly election: true;
  readonly latch: true;
  /** A semaphore's limit cannot be changed while holders exist (each holder's key records it). */
  readonly setPermits: false;
  /** etcd is a consensus store already: a Redlock-style quorum over several clusters is refused. */
  readonly quorum: false;
  /** A fencing guard written to another store than this one (only etcd Txns are offered). */
  readonly foreignGuard: false;
}

/** The features `EtcdStore.require` can be asked about. */
export type Feature = "setPermits" | "quorum" | "foreignGuard" | "nestedRead";

/** Limits a caller must respect, reported by the store. */
export interface Bounds {
  /** etcd leases count whole seconds: a `leaseTimeMs` is served by a lease of this granularity, rounded up. */
  readonly leaseGranularityMs: number;
  /** The session lease's TTL as granted by the cluster (it may raise a short request to its minimum). */
  readonly sessionTtlMs: number;
  /** Longest a single etcd request may take before it fails with ConnectionError. */
  readonly requestTimeoutMs: number;
  /** How often a waiter re-reads the queue even without a wake-up (a watch can be silent in a partition). */
  readonly recheckMs: number;
}

/**
 * The seam the etcd store offers the layers above: locks by name, holds by id, typed coordination
 * operations, wake-ups and lease life inside the store. `EtcdStore` implements it.
 */
export interface NamedLockStore {
  readonly capabilities: Capabilities;
  bounds(): Bounds;
  /** Throws UnsupportedError naming `feature`: for what `capabilities` says is not offered. */
  require(feature: Feature): never;
  /** Acquires or re-enters, waiting (on the store's own wake-ups) up to `timeoutMs`. */
  acquire(req: AcquireRequest): Promise<Held>;
  /** Several names as one hold (sorted order, all or none). */
  acquireAll(names: readonly string[], req: Omit<AcquireRequest, "name">): Promise<Held[]>;
  release(ref: HoldRef, entry: string): Promise<ReleaseResult>;
  /** Renews now; the new held-until instant. */
  extend(ref: HoldRef, ttlMs: number): Promise<number>;
  check(ref: HoldRef): Promise<boolean>;
  campaign(req: Omit<AcquireRequest, "mode" | "reentry"> & { readonly value: string }): Promise<Held>;
  proclaim(ref: HoldRef, value: string): Promise<void>;
  readLeader(name: string): Promise<LeaderInfo | undefined>;
  resign(ref: HoldRef): Promise<ReleaseResult>;
  countDown(name: string, id: string, ttlMs: number): Promise<boolean>;
  readLatch(name: string, count: number): Promise<LatchState>;
  awaitLatch(name: string, count: number, timeoutMs: number, signal?: AbortSignal): Promise<LatchState>;
  inspect(name: string): Promise<LockInfo>;
  forceRelease(name: string): Promise<number>;
  close(): Promise<void>;
}
