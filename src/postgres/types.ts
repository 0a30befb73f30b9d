/**
 * What the PostgreSQL store needs of node-postgres, written as shapes so that surelock never
 * imports `pg` (an optional peer): a `pg.Pool` and its clients fit them. And the store's seam: the
 * calls the lock engine makes, addressed by lock name, with the answers it gets back.
 */

/** A result of `query`: the rows, as objects keyed by column name. */
export interface PgResult {
  readonly rows: readonly Record<string, unknown>[];
}

/** Anything that runs a statement: a `pg.Client`, a `pg.PoolClient` (the user's, in a guard check). */
export interface PgQueryable {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<PgResult>;
}

/** A client checked out of a pool: surelock gives it back with `release()`, or `release(true)` to end its connection. */
export interface PgPoolClient extends PgQueryable {
  release(destroy?: boolean | Error): void;
  on(event: "notification", listener: (message: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  removeListener(event: "error", listener: (error: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
}

/** A node-postgres `Pool` the user made; surelock never ends it. */
export interface PgPool {
  connect(): Promise<PgPoolClient>;
}

/** 'x' mutex, 'r' read, 'w' write, 's' semaphore permits. */
export type PgMode = "x" | "r" | "w" | "s";

/**
 * How an attempt relates to holds that exist: `fresh` founds a hold; `hold` enters the named hold
 * (a re-entry through a lease); `owner` enters a hold of the same owner and mode, or founds one.
 */
export type Reentry = { readonly kind: "fresh" } | { readonly kind: "hold"; readonly hold: string } | { readonly kind: "owner" };

/** One attempt. A multi-lock passes several names (mode 'x'); the store sorts them. */
export interface AcquireRequest {
  readonly names: readonly string[];
  /** The hold a fresh attempt founds; also the waiter's ticket. */
  readonly hold: string;
  readonly owner: string;
  readonly mode: PgMode;
  /** Permits asked for (mode 's'; 1 otherwise). */
  readonly permits?: number;
  /** The semaphore's limit (mode 's'). */
  readonly limit?: number;
  readonly ttlMs: number;
  readonly reentry: Reentry;
  /** This entry's id: a replay of it (a lost reply) answers as the first time. Defaults to `hold`. */
  readonly entry?: string;
  /** How long the waiter's ticket lives without a refresh; 0 (the default): no ticket, one attempt. */
  readonly ticketMs?: number;
}

/** A lease the store granted: its hold, its tokens and when it ends on the caller's monotonic clock. */
export interface Granted {
  readonly status: "founded" | "entered";
  readonly hold: string;
  /** The fencing token of each name, in the order of `names` as given. */
  readonly tokens: readonly bigint[];
  /** The first name's token. */
  readonly token: bigint;
  /** The database's time left on the lease, in ms. */
  readonly pttlMs: number;
  /** `performance.now()` before the call was sent plus `pttlMs`: the lease is not valid past it. */
  readonly validUntil: number;
}

export type AcquireResult =
  | Granted
  /** Not granted: `position` tickets ahead (-1: no ticket taken); `waitMs` until the first blocking hold expires. */
  | { readonly status: "busy"; readonly position: number; readonly waitMs: number }
  /** A re-entry of a hold that is not live. */
  | { readonly status: "gone" }
  /** A semaphore exists with another limit. */
  | { readonly status: "conflict"; readonly limit: number };

/** What a release did: `held` (entries remain), `freed` (the hold ended), `gone` (no live hold). */
export interface ReleaseResult {
  readonly status: "held" | "freed" | "gone";
  readonly remaining: number;
}

/** One item of a renewal batch: a hold's lease or a waiter's ticket. */
export interface RenewItem {
  readonly kind: "hold" | "ticket";
  readonly names: readonly string[];
  /** The hold's id, or the ticket's (= the waiting hold's id). */
  readonly id: string;
  readonly ttlMs: number;
}

/** An item's answer: live (renewed for its ttl, valid until `validUntil`), or gone. */
export interface RenewResult {
  readonly live: boolean;
  readonly pttlMs: number;
  readonly validUntil: number;
}

/** A hold as the database sees it now. */
export interface HoldCheck {
  readonly live: boolean;
  readonly pttlMs: number;
  readonly validUntil: number;
  readonly tokens: readonly bigint[];
  readonly entries: number;
}

/** The live leader of an election: its hold, owner, token and proclaimed value (null before it proclaims). */
export interface LeaderState {
  readonly hold: string;
  readonly owner: string;
  readonly token: bigint;
  readonly value: string | null;
  readonly pttlMs: number;
}

export interface CountDownResult {
  /** `counted`; `replay` (this id counted before, or the latch was at 0); `conflict` (made with another count: `remaining` is that count). */
  readonly status: "counted" | "replay" | "conflict";
  readonly remaining: number;
}

export interface LatchState {
  readonly count: number;
  readonly remaining: number;
}

/**
 * A wake-up the store delivers: a name's holds changed (`head`: the ticket first in line, null when
 * none), its leader proclaimed, its latch reached 0, or (`resync`) notifications may have been lost.
 */
export type WakeUp =
  | { readonly kind: "released"; readonly name: string; readonly head: string | null }
  | { readonly kind: "leader"; readonly name: string }
  | { readonly kind: "latch"; readonly name: string }
  | { readonly kind: "resync" };

/** What inspect shows of a name. */
export interface Inspection {
  readonly counter: bigint;
  readonly limit: number | null;
  readonly holds: readonly { hold: string; owner: string; mode: PgMode; permits: number; token: bigint; entries: number; value: string | null; pttlMs: number }[];
  readonly tickets: readonly { ticket: string; mode: PgMode; permits: number; pttlMs: number }[];
}

/** What a store can do and its bounds, for the facade to refuse what it cannot at construction. */
export interface StoreCapabilities {
  readonly store: "postgres";
  /** Where a fencing check runs: `transaction` (inside the user's own database transaction). */
  readonly fencing: "transaction";
  /** Lease validity is computed on the database's clock (clock_timestamp()). */
  readonly clock: "database";
  readonly reentry: true;
  readonly fair: true;
  readonly semaphore: true;
  readonly readWrite: true;
  readonly multi: true;
  readonly election: true;
  readonly latch: true;
  /** Wake-ups: LISTEN/NOTIFY as a hint, a bounded poll as the fallback. */
  readonly wakeups: "notify+poll";
  /** Longest name, in bytes of UTF-8. */
  readonly maxNameBytes: number;
  /** Every call's bound, ms: a call answers or fails with a typed error within it. */
  readonly callTimeoutMs: number;
  /** The poll a waiter falls back to when no wake-up comes, ms. */
  readonly pollMs: number;
}
