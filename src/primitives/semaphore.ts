/** A counting semaphore: up to `permits` permits held at once. */
import type { Runtime } from "../runtime.js";
import { Lock } from "./lock.js";

/** Options of `Surelock.semaphore()`. */
export interface SemaphoreOptions {
  /** How many permits the semaphore has (required); stored with it in Redis. */
  readonly permits: number;
  /** Lease length in ms (default: the Surelock's `ttl`). */
  readonly ttl?: number;
}

const INTERNAL = Symbol("surelock.semaphore");

/**
 * A semaphore of `permits` permits. Not reentrant: every acquisition takes a permit of its own
 * (a flow that nests acquisitions beyond `permits` waits for itself). Its limit is stored with it:
 * a caller that asks for another number gets a ConflictError.
 */
export class Semaphore extends Lock {
  /** How many permits the semaphore has. */
  readonly permits: number;

  private constructor(token: typeof INTERNAL, rt: Runtime, key: string, ttlMs: number, permits: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.semaphore()");
    const keys = rt.keys.shared(key, "sem");
    super(rt, {
      key,
      target: { family: "shared", keys, limit: permits },
      lockId: keys.holders,
      channel: keys.channel,
      mode: "s",
      permits: 1,
      ttlMs,
      sharesByOwner: false,
      reentry: () => ({ kind: "fresh" }),
    });
    this.permits = permits;
  }

  /** @internal Use `Surelock.semaphore()`. */
  static _create(rt: Runtime, key: string, ttlMs: number, permits: number): Semaphore {
    return new Semaphore(INTERNAL, rt, key, ttlMs, permits);
  }
}
