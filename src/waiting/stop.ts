/**
 * What ends a call of the waiting room: its own Interruption (a timeout, the caller's signal) joined
 * with close(), or close() alone when the caller gave neither, so that nothing is set up for it.
 */
import type { Clock } from "../clock.js";
import { Interruption } from "../deadline.js";
import { LockTimeoutError } from "../errors.js";

/** The part of an Interruption a call uses. */
export interface Stop {
  readonly signal: AbortSignal;
  throwIfInterrupted(): void;
  dispose(): void;
}

/** close() alone. */
export function closedOnly(closed: AbortSignal): Stop {
  return { signal: closed, throwIfInterrupted: () => closed.throwIfAborted(), dispose: () => {} };
}

/** One attempt's end: the caller's `signal` or close(). */
export function attemptStop(clock: Clock, closed: AbortSignal, signal: AbortSignal | undefined): Stop {
  return signal ? new Interruption({ clock, signals: [signal, closed] }) : closedOnly(closed);
}

/**
 * A wait's end: its timeout (a LockTimeoutError naming `key`), the caller's signal or close().
 * `timeoutMs` 0 is one attempt, bounded by its command timeout rather than cut short; Infinity is none.
 */
export function waitStop(o: {
  clock: Clock; closed: AbortSignal; key: string; startedAt: number; timeoutMs: number; signal: AbortSignal | undefined;
}): Stop {
  const { clock, startedAt, timeoutMs } = o;
  // Only close() can end a wait with neither a timeout nor a signal: no interruption of its own.
  if (!(timeoutMs > 0 && timeoutMs < Infinity) && o.signal === undefined) return closedOnly(o.closed);
  return new Interruption({
    clock,
    deadlineAt: timeoutMs === 0 ? Infinity : startedAt + timeoutMs,
    timeout: () => new LockTimeoutError(o.key, clock.now() - startedAt, timeoutMs),
    signals: [o.signal, o.closed],
  });
}
