/**
 * The seam between the primitives users get (Mutex, ReadWriteLock, Semaphore, MultiLock and their
 * Lease) and the store under them. A primitive describes its lock once (a LockSpec) and asks its
 * engine to take it; the engine decides how: the Redis runtime (src/runtime.ts: scripts, a
 * waiting room, a batched watchdog) or the named-store engine (src/named/engine.ts: PostgreSQL and
 * etcd, whose stores wait and keep leases alive themselves). Re-entry through `withLock` sections,
 * option checks and diagnostics stay in the primitives, the same on every store.
 */
import type { Clock } from "./clock.js";
import type { Ids } from "./ids.js";
import type { KeySpace } from "./keys.js";
import type { Lease } from "./lease/lease.js";
import type { Section, Sections } from "./lease/sections.js";
import type { HoldMode, LockTarget, Reentry, SharedTarget } from "./store/types.js";

/** Which store a Surelock runs on. */
export type StoreKind = "redis" | "postgres" | "etcd";

/**
 * How a flow that holds `section` on this lock comes in again: one of the store's ways in
 * (src/store/types.ts) but a join by owner, which the acquisition's options decide, not the
 * section; or a deadlock, refused before anything is sent.
 */
export type SectionReentry = Exclude<Reentry, { readonly kind: "owner" }> | { readonly kind: "deadlock"; readonly why: string };

/** One primitive, as the lock engine needs it. */
export interface LockSpec {
  readonly key: string;
  readonly target: LockTarget;
  /** The re-entry identity: sections of this id are this lock's. */
  readonly lockId: string;
  /** More ids a `withLock` section of this lock also stands for (a multiLock: each key's mutex). */
  readonly sectionIds?: readonly string[];
  /** Its wake-up channel (a multi-key lock: each key's). */
  readonly channel: string | readonly string[];
  readonly mode: HoldMode;
  /**
   * A semaphore's: the largest `permits` an acquisition may ask for now (its limit). Without it,
   * every acquisition takes one, and a `permits` option is refused.
   */
  readonly maxPermits?: () => number;
  readonly ttlMs: number;
  /** Whether an explicit `owner` joins the hold that owner has (mutexes and write sides). */
  readonly sharesByOwner: boolean;
  reentry(section: Section | undefined): SectionReentry;
}

/** What an acquisition asks for, checked (see Lock's options). */
export interface Wanted {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly owner: string | undefined;
  readonly leaseTimeMs: number | undefined;
  readonly permits: number;
}

/** One acquisition as the engine gets it: the lock, what is wanted, and how the flow comes in. */
export interface Obtain {
  readonly spec: LockSpec;
  readonly wanted: Wanted;
  /** The flow's section of this lock, if it runs in one. */
  readonly section: Section | undefined;
  /** Already decided by the primitive: never `deadlock` here. */
  readonly reentry: Exclude<SectionReentry, { kind: "deadlock" }>;
}

/** What an engine answers: the lease, whether it re-entered a hold, and how many attempts it took. */
export interface ObtainResult {
  readonly lease: Lease;
  readonly entered: boolean;
  readonly attempts: number;
}

/** What every lock primitive needs of the Surelock it came from. */
export interface Engine {
  readonly kind: StoreKind;
  readonly keys: KeySpace;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly sections: Sections;
  /** The wait of an acquire that names no timeout, ms (Infinity: none). */
  readonly acquireTimeoutMs: number;
  /** Aborts, with a ClosedError, when the Surelock is closed. */
  readonly closed: AbortSignal;
  /** Throws ClosedError once the Surelock is closed. */
  assertOpen(): void;
  /** Takes (or re-enters) the lock, waiting as `wanted` says. */
  obtain(request: Obtain): Promise<ObtainResult>;
  /** Changes a semaphore's stored limit (UnsupportedError where the store cannot). */
  setPermits(target: SharedTarget, limit: number): Promise<void>;
}

/** What a latch needs of its store: Redis's scripts and channel, or a named store's calls (src/named/latch.ts). */
export interface LatchOps {
  readonly clock: Clock;
  /** Aborts when the Surelock is closed. */
  readonly closed: AbortSignal;
  /** The longest pause between two looks of a waiter that heard nothing, ms. */
  readonly pollMs: number;
  assertOpen(): void;
  newId(): string;
  /** Counts `id` down once; what is left, and whether this call counted. */
  countDown(id: string): Promise<{ readonly left: number; readonly counted: boolean }>;
  /** What is left of the count (the count itself for a latch the store does not have). */
  read(): Promise<number>;
  /** Calls `poke` when the latch may have opened; `ready` settles once listening (or failed: then the poll covers). */
  listen(poke: () => void): { readonly ready: Promise<unknown>; release(): void };
}

/** What an election needs of its store besides its candidacy lock: the leader's value, reading it, hearing of changes. */
export interface ElectionOps {
  /** Stores `value` (null: none) as the value of the leadership `lease` holds, and announces it. */
  proclaim(lease: Lease, value: string | null): Promise<void>;
  /** The leader now, or null. */
  leader(): Promise<LeaderReading | null>;
  /** Calls `poke` when the leader may have changed; `ready` settles once listening (or failed). */
  listen(poke: () => void): { readonly ready: Promise<unknown>; release(): void };
}

/** A leader as read from the store (the public `Leader`). */
export interface LeaderReading {
  readonly owner: string;
  readonly value: string | null;
  readonly fencingToken: bigint;
  readonly expiresInMs: number;
}
