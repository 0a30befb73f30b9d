/**
 * What ends a call of the waiting room: its own Interruption (a timeout, the caller's signal) joined
 * with close(), or close() alone when the caller gave neither, so that nothing is set up for it.
 */
import type { Clock } from "../clock.js";
import { Interruption, race, raceWith } from "../deadline.js";
import { LockTimeoutError } from "../errors.js";

/** The part of an Interruption a call uses. */
export interface Stop {
  readonly signal: AbortSignal;
  throwIfInterrupted(): void;
  /** Settles as `work` does, or rejects with the reason once interrupted (`race`, deadline.ts). */
  race<T>(work: Promise<T>, late?: (value: T) => void): Promise<T>;
  dispose(): void;
}

/** close() alone: one per `closed` signal, shared by every call that has no stop of its own. */
const closedOnlyStops = new WeakMap<AbortSignal, Stop>();

export function closedOnly(closed: AbortSignal): Stop {
  let stop = closedOnlyStops.get(closed);
  if (!stop) {
    stop = new ClosedOnly(closed);
    closedOnlyStops.set(closed, stop);
  }
  return stop;
}

/**
 * close() alone, raced without an abort listener per call: most calls have no stop of their own,
 * and an EventTarget listener added and removed per call cost more than the rest of an
 * uncontended acquire's bookkeeping. The calls in flight are a Set, rejected at close().
 */
class ClosedOnly implements Stop {
  readonly signal: AbortSignal;
  readonly #pending = new Set<(reason: unknown) => void>();

  constructor(closed: AbortSignal) {
    this.signal = closed;
    closed.addEventListener("abort", () => {
      for (const reject of this.#pending) reject(closed.reason);
      this.#pending.clear();
    }, { once: true });
  }

  throwIfInterrupted(): void {
    this.signal.throwIfAborted();
  }

  race<T>(work: Promise<T>, late?: (value: T) => void): Promise<T> {
    if (this.signal.aborted) return race(work, this.signal, late);
    return raceWith(work, (interrupt) => {
      this.#pending.add(interrupt);
      return () => {
        this.#pending.delete(interrupt);
      };
    }, late);
  }

  dispose(): void {}
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
  /** At the timeout: why Redis was not answering, if it was not (the timeout's cause). */
  unanswered?: () => Error | undefined;
}): Stop {
  const { clock, startedAt, timeoutMs } = o;
  // Only close() can end a wait with neither a timeout nor a signal: no interruption of its own.
  if (!(timeoutMs > 0 && timeoutMs < Infinity) && o.signal === undefined) return closedOnly(o.closed);
  return new Interruption({
    clock,
    deadlineAt: timeoutMs === 0 ? Infinity : startedAt + timeoutMs,
    timeout: () => {
      const cause = o.unanswered?.();
      return new LockTimeoutError(o.key, clock.now() - startedAt, timeoutMs, "lock", cause && { cause });
    },
    signals: [o.signal, o.closed],
  });
}
