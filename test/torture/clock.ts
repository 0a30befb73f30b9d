/**
 * The one clock of a run. On Linux `process.hrtime` reads CLOCK_MONOTONIC, which is system-wide:
 * every process on the machine reads the same value at the same instant, so events stamped by
 * different workers can be compared directly. The orchestrator checks that with a ping at start.
 */

/** Milliseconds on the machine's monotonic clock (microsecond resolution). */
export const monoMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

/** Milliseconds since `origin` (a run's start), rounded to microseconds for the history. */
export const since = (origin: number, at = monoMs()): number => Math.round((at - origin) * 1000) / 1000;
