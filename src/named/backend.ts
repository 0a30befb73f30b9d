/**
 * One internal interface over the two stores that address locks by name and keep their leases
 * alive themselves: PostgreSQL (PostgresStore + PostgresLocks) and etcd (EtcdStore). They differ in
 * how they say things (a list of names vs. one name per call, `PgHeld` vs. `Held`, statuses, a
 * multi-lock's order of tokens); the adapters in this folder make them say the same, so that one
 * engine (engine.ts) runs every primitive on either.
 */

/** What is asked for on a name. A mutex and a write side exclude everyone; readers share. */
export type NamedMode =
  | { readonly kind: "mutex" }
  | { readonly kind: "read" }
  | { readonly kind: "write" }
  | { readonly kind: "semaphore"; readonly limit: number; readonly permits: number };

/** How an acquisition relates to holds that exist (the same three kinds on both stores). */
export type NamedReentry =
  | { readonly kind: "fresh" }
  /** One more entry on the hold `hold` (a re-entry through a withLock section): never waits. */
  | { readonly kind: "hold"; readonly hold: string }
  /** One more entry on the hold of the same owner and mode, or a fresh hold when there is none. */
  | { readonly kind: "owner" };

export interface NamedAcquire {
  /** One name, or a multi-lock's names (mode mutex), in the user's order. */
  readonly names: readonly string[];
  readonly mode: NamedMode;
  /** The hold a fresh acquisition founds. */
  readonly hold: string;
  /** This entry's id (`hold` for a fresh acquisition). */
  readonly entry: string;
  readonly owner: string;
  readonly reentry: NamedReentry;
  /** A renewed lease's length, ms (what the store's watchdog renews with, where it has a ttl per hold). */
  readonly ttlMs: number;
  /** A fixed lease nobody renews, ms. */
  readonly leaseTimeMs: number | undefined;
  /** 0 is one attempt; Infinity, no bound. */
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** An election's candidacy (one name, mode mutex, fresh): etcd keeps candidates apart from locks. */
  readonly election?: boolean;
}

/** A hold the store granted (or entered), and its life as the store watches it. */
export interface NamedHeld {
  readonly status: "founded" | "entered";
  /** The hold's id (the joined one, for an entry). */
  readonly hold: string;
  /** Each name's fencing token, in the order the names were given. */
  readonly tokens: readonly bigint[];
  /** Aborts, with a LockLostError, once the store can no longer vouch for the hold. */
  readonly signal: AbortSignal;
  /** The instant (on the engine's clock) until which the hold is trusted, as of now. */
  heldUntil(): number;
}

/** A countdown latch by name: a set of ids counted down, open at `count` of them. */
export interface NamedLatch {
  /** Counts `id` down once (a replay counts once); ConflictError when the store keeps another count for it. */
  countDown(name: string, id: string, count: number, ttlMs: number): Promise<{ readonly left: number; readonly counted: boolean }>;
  /** What is left (the count itself for a latch the store does not have). */
  read(name: string, count: number): Promise<number>;
  /** Calls `poke` when the latch may have opened, until `release()`; `ready` settles once listening. */
  listen(name: string, count: number, poke: () => void): { readonly ready: Promise<unknown>; release(): void };
}

/** An election by name: its candidacy is a hold taken with `election: true`. */
export interface NamedElection {
  /** Stores `value` as the leadership's; LockLostError when `held` no longer leads. */
  proclaim(held: NamedHeld, name: string, value: string): Promise<void>;
  /** The leader now: its owner, value (null before any), token and time left on its lease. */
  leader(name: string): Promise<{ owner: string; value: string | null; token: bigint; expiresInMs: number } | null>;
  /** Calls `poke` when the leader may have changed, until `release()`. */
  listen(name: string, poke: () => void): { readonly ready: Promise<unknown>; release(): void };
}

export interface NamedBackend {
  readonly store: "postgres" | "etcd";
  readonly latch: NamedLatch;
  readonly election: NamedElection;
  acquire(request: NamedAcquire): Promise<NamedHeld>;
  /** Gives `entry` back: `held` (entries remain), `freed` (the hold ended), `gone` (it was not live). */
  release(held: NamedHeld, entry: string): Promise<"held" | "freed" | "gone">;
  /** Renews now; the new held-until instant, or LockLostError when it is gone. */
  extend(held: NamedHeld, ttlMs: number): Promise<number>;
  /** Whether the store still has the hold (one request). */
  check(held: NamedHeld): Promise<boolean>;
  /**
   * etcd: runs the store's own write operations in one transaction that goes through only while
   * the hold stands (its keys with their creation revisions). Absent where a store fences otherwise.
   */
  fenced?(held: NamedHeld, operations: readonly object[]): Promise<{ readonly written: boolean; readonly responses: readonly object[] }>;
  /** Stops the store's watchdog and wake-ups; never closes the user's client. */
  close(): Promise<void>;
}
