/**
 * The clock and timers every deadline in surelock goes through. Wall-clock jumps (NTP, a user
 * setting the date) must not stretch or shrink a lease, so time is monotonic; and tests can swap
 * in a virtual clock (surelock/testing) to explore races without waiting for them.
 */
import { performance } from "node:perf_hooks";

/** A monotonic clock with timers. */
export interface Clock {
  /** Milliseconds on a monotonic clock (it keeps running while the process is stopped). */
  now(): number;
  /**
   * Calls `fn` once after `ms` and returns a handle for `clearTimeout`. Timers never keep the
   * process alive unless `keepAlive` is true (a caller's own wait, such as an acquire's timeout).
   */
  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): unknown;
  /** Cancels a timer `setTimeout` returned (undefined: nothing to cancel). */
  clearTimeout(handle: unknown): void;
}

/** performance.now() and Node's timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms, keepAlive = false) {
    const timer = setTimeout(fn, Math.max(0, ms));
    if (!keepAlive) timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout | undefined);
  },
};

/**
 * Safety margin subtracted from a lease's validity: clocks of client and server may run at
 * slightly different rates (1% of the lease) and timers fire late (2 ms). As in Redlock.
 */
export const driftMs = (ttlMs: number): number => Math.floor(ttlMs * 0.01) + 2;

/**
 * Until when a lease confirmed by a request sent at `sentAt` (monotonic ms), with `pttlMs` left,
 * can be trusted: the store applied the request after it was sent, so the lease lasts at least
 * `pttlMs` from then, less the drift. The one place that rule is written (holds, grants, late answers).
 */
export const trustedUntil = (sentAt: number, pttlMs: number): number => sentAt + pttlMs - driftMs(pttlMs);
