/**
 * Events on node:diagnostics_channel. Every channel is created once here; a message is built only
 * when someone subscribes. Subscribers run synchronously inside surelock: keep them cheap.
 */
// Named, not default, imports: the declarations must compile without esModuleInterop.
import { channel } from "node:diagnostics_channel";
import { debuglog } from "node:util";
import type { LockLostReason } from "./errors.js";

/** Published when a lease was acquired (also on re-entry). */
export interface AcquireMessage {
  /** The user's key. */
  readonly key: string;
  /** The lease's fencing token. */
  readonly fencingToken: bigint;
  /** Whether it entered a hold this flow already had (a re-entry or a join by owner). */
  readonly reentered: boolean;
  /** Time from the call to the lease, ms. */
  readonly waitedMs: number;
  /** Number of attempts sent to Redis. */
  readonly attempts: number;
}
/** Published when a lease was released (also when `close()` gave it back). */
export interface ReleaseMessage {
  /** The user's key. */
  readonly key: string;
  /** The lease's fencing token. */
  readonly fencingToken: bigint;
  /** Time the lease was held, ms. */
  readonly heldMs: number;
}
/** Published on each explicit extend and each watchdog renewal batch. */
export interface ExtendMessage {
  /** The user's key. */
  readonly key: string;
  /** The lease's fencing token. */
  readonly fencingToken: bigint;
  /** The ttl it renewed for, ms. */
  readonly ttl: number;
  /** True when the watchdog did it. */
  readonly automatic: boolean;
}
/** Published when a lease is lost (not when `close()` gives it back: that is a shutdown, not a loss). */
export interface LostMessage {
  /** The user's key. */
  readonly key: string;
  /** The lease's fencing token. */
  readonly fencingToken: bigint;
  /** Why (see LockLostError.reason); never `closed`. */
  readonly reason: Exclude<LockLostReason, "closed">;
  /** Time from the moment the lease became unsafe to the abort, ms (0 when it was learned from Redis). */
  readonly lateByMs: number;
}
/** Published when an acquire starts waiting and when it stops, and when Redis stops and resumes answering it meanwhile. */
export interface WaitMessage {
  /** The user's key. */
  readonly key: string;
  /**
   * `start` when it begins to wait (the lock was busy), `end` when the wait is over;
   * `unreachable` when Redis stopped answering the waiter (its ticket's refresh failed: `error`
   * says why; the wait goes on, bounded by its timeout), `reachable` when Redis answers it again.
   */
  readonly phase: "start" | "end" | "unreachable" | "reachable";
  /** On `end`: how it ended. */
  readonly outcome?: "acquired" | "timeout" | "aborted" | "error";
  /** On `unreachable`: the refresh's failure (a ConnectionError, or a QuorumError in quorum mode). */
  readonly error?: Error;
  /** Time since the acquire was called, ms. */
  readonly waitedMs: number;
}
/** Published when best-effort cleanup failed (nobody else would hear about it). */
export interface ErrorMessage {
  /** The user's key. */
  readonly key: string;
  /** What failed: `release`, `renew`, `subscribe`, `leave-queue`, `abandon`. */
  readonly operation: string;
  /** Why. */
  readonly error: Error;
}

/** Published by the candidate's process when its leadership begins, changes value or ends. */
export interface LeaderMessage {
  /** The election's name. */
  readonly name: string;
  /**
   * `elected`: campaign() resolved; `proclaimed`: proclaim() stored a new value; `resigned`:
   * resign() or close() gave it up (a lease released directly shows on surelock:release only); `lost`: its
   * lease was lost (surelock:lost says why).
   */
  readonly event: "elected" | "proclaimed" | "resigned" | "lost";
  readonly owner: string;
  readonly fencingToken: bigint;
}
/** Published when a countdown latch is counted down here, and when a wait here starts waiting or sees it open. */
export interface LatchMessage {
  readonly key: string;
  /**
   * `countDown`: a countDown() call settled (`counted` false: it counted nothing, being a replay or
   * the latch open already); `waiting`: a wait() found it closed and listens for its opening;
   * `open`: a wait() ended because the count is 0.
   */
  readonly event: "countDown" | "waiting" | "open";
  /** What is left of the count. */
  readonly count: number;
  readonly counted?: boolean;
  /** On `open`: how long the wait took, ms. */
  readonly waitedMs?: number;
}

/** All surelock channels, created at load time. */
export const channels = {
  acquire: channel("surelock:acquire"),
  release: channel("surelock:release"),
  extend: channel("surelock:extend"),
  lost: channel("surelock:lost"),
  wait: channel("surelock:wait"),
  error: channel("surelock:error"),
  leader: channel("surelock:leader"),
  latch: channel("surelock:latch"),
} as const;

interface Messages {
  acquire: AcquireMessage;
  release: ReleaseMessage;
  extend: ExtendMessage;
  lost: LostMessage;
  wait: WaitMessage;
  error: ErrorMessage;
  leader: LeaderMessage;
  latch: LatchMessage;
}

/** Whether somebody listens on the channel (to skip making what `publish` would be given). */
export function listened(name: keyof Messages): boolean {
  return channels[name].hasSubscribers;
}

/** Publishes `make()` on the channel, calling `make` only when somebody listens. */
export function publish<K extends keyof Messages>(name: K, make: () => Messages[K]): void {
  const channel = channels[name];
  if (channel.hasSubscribers) channel.publish(make());
}

// NODE_DEBUG=surelock prints every event: it is one more subscriber, not a second code path.
const debug = debuglog("surelock");
if (debug.enabled) {
  for (const each of Object.values(channels)) {
    each.subscribe((message) => debug("%s %o", each.name, message));
  }
}
