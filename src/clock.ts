/**
 * The monotonic clock every deadline is measured on. Wall-clock jumps (NTP, a user setting the
 * date) must not stretch or shrink a lease, so nothing here uses Date.now().
 */
import { performance } from "node:perf_hooks";

/** Milliseconds on a monotonic clock (CLOCK_MONOTONIC: it keeps running while the process is stopped). */
export const now = (): number => performance.now();

/**
 * Safety margin subtracted from a lease's validity: clocks of client and server may run at
 * slightly different rates (1% of the lease) and timers fire late (2 ms). As in Redlock.
 */
export const driftMs = (ttlMs: number): number => Math.floor(ttlMs * 0.01) + 2;
