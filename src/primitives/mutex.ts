/** A reentrant mutual-exclusion lock on one key. */
import type { Engine } from "../engine.js";
import { Lock } from "./lock.js";

/** Options of `Surelock.mutex()`. */
export interface MutexOptions {
  /** Lease length in ms (default: the Surelock's `ttl`). The watchdog renews at ttl/3. */
  readonly ttl?: number;
  /**
   * Accepted for compatibility: every waiter is served in arrival order, across all processes
   * (the release hands the lock to the head of the queue). Default false.
   */
  readonly fair?: boolean;
}

const INTERNAL = Symbol("surelock.mutex");

/**
 * A reentrant mutex: one hold at a time. Inside `withLock`, the same mutex re-enters; an explicit
 * `owner` shares the lock on purpose; the lock is freed at its hold's last release.
 */
export class Mutex extends Lock {
  private constructor(token: typeof INTERNAL, rt: Engine, key: string, ttlMs: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.mutex()");
    // Its target is its keys (one object per lock: every held lease keeps it).
    const keys = rt.keys.mutexTarget(key);
    super(rt, {
      key,
      target: keys,
      lockId: keys.lock,
      channel: keys.channel,
      mode: "x",
      ttlMs,
      sharesByOwner: true,
      reentry: (section) => {
        if (!section) return { kind: "fresh" };
        // The flow holds this key through a multiLock: one of its keys cannot be re-entered alone.
        if (section.lease._hold.ref.target.family === "multi") {
          return { kind: "deadlock", why: `this flow holds the key in multiLock ${section.lease.key}: a mutex of one of its keys cannot re-enter it` };
        }
        return { kind: "join", hold: section.lease._hold.ref.hold };
      },
    });
  }

  /** @internal Use `Surelock.mutex()`. */
  static _create(rt: Engine, key: string, ttlMs: number): Mutex {
    return new Mutex(INTERNAL, rt, key, ttlMs);
  }
}
