/**
 * The lock protocol as the layers above see it, on one deployment or a quorum of them: attempts,
 * releases, departures from the queue, keep-alive batches, checks. Every operation is idempotent
 * (docs/protocol.md), so a call whose answer was lost is simply made again or abandoned.
 */
import type { RedisSubscriber } from "../adapters/types.js";
import type { ExclusiveKeys, MultiKeys, SharedKeys } from "../keys.js";

/**
 * Which lock: a mutex's hash, or a shared lock's zset (with a semaphore's limit). `announce`: a
 * release that frees the lock with nobody to grant it to says so on its channel ("e"), for those
 * who watch who holds it (an election's observers).
 */
export type LockTarget =
  | { readonly family: "exclusive"; readonly keys: ExclusiveKeys; readonly announce?: boolean }
  | { readonly family: "shared"; readonly keys: SharedKeys; readonly limit: number }
  /** Several mutexes held as one hold (src/protocol/multi.ts). */
  | { readonly family: "multi"; readonly keys: MultiKeys };

/** A lock of one key: what a fence is raised on. */
export type SingleTarget = Exclude<LockTarget, { readonly family: "multi" }>;

/** A shared lock's target (a semaphore's, with its limit). */
export type SharedTarget = Extract<LockTarget, { readonly family: "shared" }>;

/** 'x' mutex, 's' semaphore permits, 'r' read, 'w' write. */
export type HoldMode = "x" | "s" | "r" | "w";

/** What a fresh acquisition asks for: also its ticket's registration while it waits. */
export interface Ask {
  readonly owner: string;
  /** The hold it founds; also its ticket and its first entry's id. */
  readonly hold: string;
  readonly ttlMs: number;
  readonly mode: HoldMode;
  readonly permits: number;
  /** How long its ticket stays live without a refresh; 0: one attempt, no ticket. */
  readonly ticketLeaseMs: number;
  /**
   * Its place in quorum mode's ordered line: the wall-clock ms its wait began (comparable across
   * processes, unlike the monotonic clock), the same for every attempt and on every node.
   */
  readonly order?: number;
}

/**
 * How an attempt relates to the holds that exist. A primitive decides it from the flow's `withLock`
 * section (all but `owner`, which the acquisition's options decide); the store's protocol encodes
 * it for the scripts (src/protocol/holds.ts).
 */
export type Reentry =
  /** A hold of its own, founded for `Ask.hold`, through the waiting line. */
  | { readonly kind: "fresh" }
  /**
   * Taken with an explicit owner on a lock whose holders share by owner (a mutex, a write side, a
   * multiLock): one more entry on the hold that owner has, else a fresh hold through the line.
   */
  | { readonly kind: "owner" }
  /** One more entry on the section's hold `hold`; never waits. */
  | { readonly kind: "join"; readonly hold: string }
  /** A read hold of its own, let in past the queue because the flow holds `via` (a nested read). */
  | { readonly kind: "nested"; readonly via: string };

/** One attempt, and how it comes in: its `entry` is `ask.hold` but for a join, whose entry has an id of its own. */
export interface AcquireCall {
  readonly target: LockTarget;
  readonly ask: Ask;
  /** This entry's id (= ask.hold unless it joins a hold). */
  readonly entry: string;
  readonly reentry: Reentry;
}

/** What a store holds on to for a hold, to release, renew and check it. */
export interface HoldRef {
  readonly target: LockTarget;
  readonly hold: string;
  /** The fencing token (in quorum mode, the one the majority chose). */
  readonly token: bigint;
  /** Quorum mode: each node's own token for the hold, 0n where the node has none. */
  readonly nodeTokens?: bigint[];
  /** A multi-key hold: each key's fencing token, in key order (`token` is the first key's). */
  readonly tokens?: readonly bigint[];
}

export type AcquireResult =
  /** `ref.token` is the hold's token on this node; `leaseToken` the lease's (what a quorum chose). */
  | {
    readonly status: "founded" | "entered"; readonly ref: HoldRef; readonly pttlMs: number; readonly leaseToken: bigint;
    /** A multi-key hold: each key's lease token (`leaseToken` is the first key's). */
    readonly leaseTokens?: readonly bigint[];
  }
  /** Wait: for a grant or a turn when queued (`position` ≥ 0); else attempt again after `waitMs`. */
  | { readonly status: "busy"; readonly waitMs: number; readonly position: number; readonly counter: bigint }
  | { readonly status: "gone" }
  | { readonly status: "conflict"; readonly limit: number };

/** The lock handed to a queued waiter by the release that freed it. */
export interface Grant {
  readonly ticket: string;
  readonly token: bigint;
  /** The granted hold's PTTL, ms, when it was founded. */
  readonly pttlMs: number;
}

/** A hold as a store sees it. */
export type HoldState = "held" | "gone" | "taken";

/** What a ticket refresh found. */
export type TicketState =
  | { readonly status: "granted"; readonly token: bigint; readonly pttlMs: number }
  | { readonly status: "turn" }
  | { readonly status: "queued"; readonly position: number; readonly counter: bigint }
  /** The ticket's hold was granted and given back already: a refresh that came too late. */
  | { readonly status: "done" };

export type ReleaseResult =
  | { readonly status: "held" }
  | { readonly status: "freed"; readonly grants: readonly Grant[] }
  | { readonly status: "released" }
  | { readonly status: "gone" }
  | { readonly status: "taken" };

/** Renew a hold for `ttlMs`, or refresh a waiter's ticket (and learn of a grant). */
export type KeepaliveItem =
  /**
   * `shorten`: an extend, which may set the hold's life to exactly `ttlMs` when it has one entry
   * (no sharer was promised more); a renewal only ever lengthens it.
   */
  | { readonly kind: "renew"; readonly ref: HoldRef; readonly ttlMs: number; readonly shorten?: boolean }
  | { readonly kind: "ticket"; readonly target: LockTarget; readonly ask: Ask };

export type KeepaliveResult = HoldState | TicketState;

/** A leader's proclaim: the value it stores beside its hold on the election's lock, and announces. */
export interface ProclaimRequest {
  /** The election's name, for errors. */
  readonly name: string;
  readonly keys: { readonly lock: string; readonly channel: string };
  readonly hold: string;
  /** The leader's fencing token (its lease's). */
  readonly token: bigint;
  /** null: the leader stands for no value. */
  readonly value: string | null;
  /** Which of the leadership's proclaims this is (1, 2, ...): a node keeps the newest it was sent. */
  readonly seq: number;
  /**
   * Whether it is known to have reached a majority (quorum mode sends a proclaim twice, the second
   * time with `kept` once a majority stored it); a node names only a kept proclaim to readers.
   */
  readonly kept?: boolean;
}

/** A latch, as every caller of it names it. */
export interface LatchRequest {
  /** The latch's name, for errors. */
  readonly name: string;
  readonly keys: { readonly state: string; readonly channel: string };
  /** The count it was created with: a latch stored with another count is a conflict. */
  readonly count: number;
}

/** One count down, under an id of its own (a replay counts once). */
export interface CountDownRequest extends LatchRequest {
  readonly id: string;
  /** How long the latch lives after its creation, ms. */
  readonly ttlMs: number;
}

/** Who holds an election's lock on one node, and what it proclaimed. */
export interface LeaderReply {
  readonly owner: string;
  readonly hold: string;
  /** The token the leader proclaimed (its lease's), or this node's own token for the hold until then. */
  readonly token: bigint;
  readonly pttlMs: number;
  readonly proclaimed: boolean;
  /** The proclaimed value; null when none was proclaimed (or not yet). */
  readonly value: string | null;
  /** Which of the hold's proclaims this node shows (they are numbered 1, 2, ... by its leader); 0 before any. */
  readonly seq: number;
  /** The hold's newest *kept* proclaim on this node (proclaim.lua: known to have reached a majority); absent before one is. */
  readonly kept?: { readonly seq: number; readonly value: string | null };
}

/** A latch's count on one node; `ids`, when asked for (quorum mode), the count downs it has counted. */
export type LatchReply =
  | { readonly status: "counted" | "unchanged"; readonly left: number; readonly ids: readonly string[] }
  | { readonly status: "conflict"; readonly count: number };

export interface Store {
  readonly name: string;
  /** Whether a release hands the lock to the queue's head itself (single-node mode). */
  readonly grants: boolean;
  /** One attempt; `stop` ends any retrying a store does inside it (quorum mode). */
  acquire(call: AcquireCall, stop?: AbortSignal): Promise<AcquireResult>;
  /** Gives an attempt back whatever it may have obtained (its reply was lost, or came too late). */
  abandon(call: AcquireCall): Promise<void>;
  /**
   * Quorum mode, on one node: gives back a hold `call`'s attempt founded there without winning a
   * majority, and keeps (or puts) its ticket in its place in the ordered line.
   */
  stepAside(call: AcquireCall): Promise<void>;
  /**
   * Gives `entry` back. `here`: the caller's instance (its tickets are `<instance>.<n>`), when the
   * caller hands a grant in the reply over itself (the release then announces none to them).
   */
  release(ref: HoldRef, entry: string, here?: string): Promise<ReleaseResult>;
  keepalive(items: readonly KeepaliveItem[]): Promise<KeepaliveResult[]>;
  check(ref: HoldRef): Promise<HoldState>;
  /**
   * Stores a semaphore's limit on purpose (set-permits.lua), under the change id `id` (a replay
   * changes nothing); the grants a raised limit made (none in quorum mode, where the heads are told
   * it is their turn). Quorum mode: applied on a majority, or QuorumError.
   */
  setPermits(target: SharedTarget, limit: number, id: string): Promise<readonly Grant[]>;
  /** Quorum mode: raises a node's counter to the token a majority chose for `hold`, and records it beside the hold. */
  raise(target: SingleTarget, chosen: bigint, hold: string): Promise<void>;
  /**
   * Stores an election leader's value beside its hold and announces it; the hold's state as the
   * store shows it. Quorum mode: the state a majority agrees on, or QuorumError.
   */
  proclaim(req: ProclaimRequest): Promise<HoldState>;
  /**
   * Who holds an election's lock and what it proclaimed, or null. Quorum mode: the hold a majority
   * of nodes shows, with the newest value any of them shows and the life a majority still gives
   * it; null when none does; QuorumError when too few nodes answered to tell.
   */
  readLeader(name: string, lock: string): Promise<LeaderReply | null>;
  /** Counts one id down on a latch: what is left (quorum mode: over the distinct ids a majority counted). */
  countDown(req: CountDownRequest): Promise<LatchReply>;
  /** What is left of a latch, as countDown reckons it. */
  readLatch(req: LatchRequest): Promise<LatchReply>;
  /** The connections that receive wake-ups (one per node). */
  subscribers(): Promise<RedisSubscriber>[];
  /**
   * Quorum mode: resolves once the node calls still running after their answers were decided have
   * settled (each within its command timeout), so that close() leaves no release half done.
   */
  drain?(): Promise<void>;
}
