/**
 * Bounding promises, written once: every wait in surelock ends at the first of its own outcome,
 * its timeout, its caller's signal and close(). An `Interruption` folds those into one
 * AbortSignal; `race` settles a promise early when that signal aborts and hands a result that
 * arrives afterwards to whoever must undo it. A `DeadlineQueue` bounds many calls that share one
 * timeout with a single timer; `within` bounds a one-off call (a subscription, a connect, a QUIT)
 * on real time, `boundedBy` one on the runtime's clock; `pause` waits on that clock until a time,
 * a signal or a wake-up, whichever comes first. A `Shutdown` is the one close of an instance:
 * the signal every wait ends on, the one check that refuses work after close().
 */
import { setMaxListeners } from "node:events";
import type { Clock } from "./clock.js";
import { ClosedError } from "./errors.js";

/** An AbortController that thousands of waiters may listen to. */
export function widelyWatched(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

export interface InterruptionOptions {
  readonly clock: Clock;
  /** Monotonic instant at which `timeout()` becomes the reason; Infinity for none. */
  readonly deadlineAt?: number;
  readonly timeout?: () => Error;
  /** Signals whose abort (with their own reason) interrupts too: the caller's, close()'s. */
  readonly signals?: readonly (AbortSignal | undefined)[];
}

/** The first of a deadline and some signals, as one signal. Call `dispose()` when done. */
export class Interruption {
  readonly #controller = widelyWatched();
  readonly #clock: Clock;
  readonly #listening: [AbortSignal, () => void][] = [];
  #timer: unknown;

  constructor(o: InterruptionOptions) {
    this.#clock = o.clock;
    for (const signal of o.signals ?? []) {
      if (!signal) continue;
      if (signal.aborted) {
        this.#controller.abort(signal.reason);
        return;
      }
      const listener = (): void => this.#controller.abort(signal.reason);
      signal.addEventListener("abort", listener, { once: true });
      this.#listening.push([signal, listener]);
    }
    const at = o.deadlineAt ?? Infinity;
    if (at < Infinity) this.#arm(at, o.timeout ?? (() => new Error("timed out")));
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Rejects with the reason if interrupted already. */
  throwIfInterrupted(): void {
    this.#controller.signal.throwIfAborted();
  }

  /** Settles as `work` does, or rejects with the reason once interrupted (see `race`). */
  race<T>(work: Promise<T>, late?: (value: T) => void): Promise<T> {
    return race(work, this.#controller.signal, late);
  }

  dispose(): void {
    this.#clock.clearTimeout(this.#timer);
    for (const [signal, listener] of this.#listening) signal.removeEventListener("abort", listener);
    this.#listening.length = 0;
  }

  #arm(at: number, timeout: () => Error): void {
    // Timers run on a coarser clock than ours and may fire a little early: re-arm until due.
    const left = at - this.#clock.now();
    if (left <= 0) {
      this.#controller.abort(timeout());
      return;
    }
    this.#timer = this.#clock.setTimeout(() => this.#arm(at, timeout), Math.ceil(left), true);
  }
}

/**
 * Settles as `work` does, or rejects with `stop.reason` as soon as `stop` aborts. A value `work`
 * yields after that goes to `late` (to give back what was obtained too late).
 */
export function race<T>(work: Promise<T>, stop: AbortSignal, late?: (value: T) => void): Promise<T> {
  if (stop.aborted) {
    work.then((value) => late?.(value), () => {});
    return Promise.reject(stop.reason as unknown);
  }
  return raceWith(work, (interrupt) => {
    const onAbort = (): void => interrupt(stop.reason);
    stop.addEventListener("abort", onAbort, { once: true });
    return () => stop.removeEventListener("abort", onAbort);
  }, late);
}

/**
 * `race` over any source of interruption: `watch` arms it (handing over the function that
 * interrupts with a reason) and returns what disarms it, called once `work` settles.
 */
export function raceWith<T>(
  work: Promise<T>, watch: (interrupt: (reason: unknown) => void) => () => void, late?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const unwatch = watch((reason) => {
      settled = true;
      reject(reason);
    });
    work.then(
      (value) => {
        unwatch();
        if (settled) late?.(value);
        else {
          settled = true;
          resolve(value);
        }
      },
      (error: unknown) => {
        unwatch();
        if (settled) return;
        settled = true;
        reject(error);
      },
    );
  });
}

/**
 * Settles as `call` does, or rejects with `late()` after `ms`. For the connection chores of the
 * adapters, which run on real time whatever the runtime's clock: a virtual clock in a test must
 * not stall a socket. The timer never keeps the process alive.
 */
export function within<T>(call: Promise<T>, ms: number, late: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), ms);
    timer.unref();
    call.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * Waits `ms` on `clock` (Infinity: no time limit), or less: until `stop` aborts, or until the
 * function handed to `onWake` is called (an announcement). Resolves in every case, and leaves no
 * timer or listener behind.
 */
export function pause(clock: Clock, ms: number, stop?: AbortSignal, onWake?: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    if (stop?.aborted) return resolve();
    let timer: unknown;
    const done = (): void => {
      if (timer !== undefined) clock.clearTimeout(timer);
      stop?.removeEventListener("abort", done);
      resolve();
    };
    if (ms < Infinity) timer = clock.setTimeout(done, Math.max(0, ms), true);
    stop?.addEventListener("abort", done, { once: true });
    onWake?.(done);
  });
}

/**
 * Settles as `work` does, or resolves with undefined after `ms` on `clock`: for a wait whose
 * outcome only saves time (a subscription that confirms late costs latency, not correctness).
 */
export function boundedBy<T>(clock: Clock, ms: number, work: Promise<T>): Promise<T | undefined> {
  let timer: unknown;
  const bound = new Promise<undefined>((resolve) => {
    timer = clock.setTimeout(() => resolve(undefined), ms, true);
  });
  return Promise.race([work, bound]).finally(() => clock.clearTimeout(timer));
}

const NOTHING = (): void => {};

/** One call's deadline in a DeadlineQueue: cancel it when the call settles. */
class Pending {
  readonly at: number;
  /** Let go of once done: a settled call behind a slow one must not keep its promises alive. */
  expire: () => void;
  done = false;
  readonly #queue: DeadlineQueue;

  constructor(queue: DeadlineQueue, at: number, expire: () => void) {
    this.#queue = queue;
    this.at = at;
    this.expire = expire;
  }

  cancel(): void {
    this.done = true;
    this.expire = NOTHING;
    this.#queue.settled();
  }
}

/**
 * Deadlines of calls that all share one timeout: they expire in the order they were added, so a
 * FIFO and one timer armed for its head bound them all (a timer and a closure per call cost more
 * than the call's own bookkeeping on a fast network).
 */
export class DeadlineQueue {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  /** Oldest first; the slots before `#head` are emptied as it passes them. */
  readonly #queue: (Pending | undefined)[] = [];
  #head = 0;
  #armedAt = Infinity;

  constructor(clock: Clock, timeoutMs: number) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
  }

  /** Calls `expire` after the timeout unless `cancel()` on the returned handle came first. */
  add(expire: () => void): { cancel(): void } {
    const pending = new Pending(this, this.#clock.now() + this.#timeoutMs, expire);
    this.#queue.push(pending);
    if (this.#armedAt === Infinity) this.#arm(pending.at);
    return pending;
  }

  /** A call was cancelled: calls mostly settle in the order they were made, so the line stays short as they do. */
  settled(): void {
    this.#skipDone();
  }

  #arm(at: number): void {
    this.#armedAt = at;
    // Never cleared when the line empties: re-arming a timer per call costs more than one that
    // fires for nothing now and then. (A pending call's socket keeps the process alive, not this.)
    this.#clock.setTimeout(() => this.#fire(), Math.ceil(at - this.#clock.now()));
  }

  #fire(): void {
    this.#armedAt = Infinity;
    const now = this.#clock.now();
    while (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head] as Pending;
      if (!next.done && next.at > now) break;
      this.#queue[this.#head++] = undefined;
      if (!next.done) {
        next.done = true;
        next.expire();
      }
    }
    this.#skipDone();
    const head = this.#queue[this.#head];
    if (head) this.#arm(head.at);
  }

  #skipDone(): void {
    while (this.#head < this.#queue.length && (this.#queue[this.#head] as Pending).done) this.#queue[this.#head++] = undefined;
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
      // With calls always in flight the line never empties: drop the passed slots now and then.
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

/**
 * One Surelock's close, as one state machine: `open` → `closing` (close() was called: `signal`
 * aborts with a ClosedError, every wait ends and `assertOpen` refuses new work; the work close lets
 * finish, a release on the wire, still runs, counted by `begin`/`end`) → `closed` (close's steps
 * ended). Every part of the instance reads this one state instead of keeping a flag of its own.
 * There is no forceful close: each step close waits for is bounded by its own timeout.
 */
export class Shutdown {
  readonly #controller = widelyWatched();
  #closing: Promise<void> | undefined;
  #ended = false;
  /** Work close lets finish, on the wire now. */
  #inFlight = 0;
  #drained: Promise<void> | undefined;
  #onDrained: (() => void) | undefined;

  /** Aborts, with a ClosedError, the moment close begins. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get state(): "open" | "closing" | "closed" {
    return this.#ended ? "closed" : this.#closing ? "closing" : "open";
  }

  /** The one refusal of new work after close(): throws ClosedError once close began. */
  assertOpen(): void {
    if (this.#controller.signal.aborted) throw new ClosedError();
  }

  /** Work that close lets finish begins (call `end` once it settles, whatever the outcome). */
  begin(): void {
    this.#inFlight++;
  }

  end(): void {
    if (--this.#inFlight > 0 || !this.#onDrained) return;
    this.#onDrained();
    this.#onDrained = undefined;
  }

  /** Settles once no work begun with `begin` is left (at once when none is). */
  get drained(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    this.#drained ??= new Promise<void>((resolve) => { this.#onDrained = resolve; }).finally(() => { this.#drained = undefined; });
    return this.#drained;
  }

  /**
   * Begins closing: aborts `signal`, then runs `steps` (once: a second call returns the first
   * call's promise), after which the state is `closed`.
   */
  close(steps: () => Promise<void>): Promise<void> {
    if (!this.#closing) {
      this.#controller.abort(new ClosedError());
      this.#closing = steps().finally(() => { this.#ended = true; });
    }
    return this.#closing;
  }
}
