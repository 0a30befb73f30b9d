/** The signals exec listens to: relayed to the command while it runs, ending the wait before that. */
import { constants } from "node:os";

/** Signals that end the wait, or are passed on to the command once it runs. */
export const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** One of FORWARDED. */
export type Forwarded = (typeof FORWARDED)[number];

/**
 * Catches SIGINT, SIGTERM and SIGHUP for as long as exec runs and hands them to the current
 * handler. A signal that arrives between two handlers (the command is being started) is kept
 * for the next one, so it is never lost.
 */
export class SignalRelay {
  #handler: ((signal: Forwarded) => void) | undefined;
  #pending: Forwarded | undefined;
  readonly #listeners = new Map<Forwarded, () => void>();

  constructor() {
    for (const signal of FORWARDED) {
      const listener = (): void => {
        if (this.#handler) this.#handler(signal);
        else this.#pending = signal;
      };
      this.#listeners.set(signal, listener);
      process.on(signal, listener);
    }
  }

  /** Who gets the next signal (and a signal kept since the last handler left); undefined to keep them. */
  set onSignal(handler: ((signal: Forwarded) => void) | undefined) {
    this.#handler = handler;
    const pending = this.#pending;
    this.#pending = undefined;
    if (handler && pending) handler(pending);
  }

  /** Stops catching the signals (their default action applies again). */
  dispose(): void {
    for (const [signal, listener] of this.#listeners) process.off(signal, listener);
    this.#listeners.clear();
  }
}

/** The number of a signal, for the shell's 128 + n exit codes. */
export function signalNumber(signal: NodeJS.Signals): number {
  return constants.signals[signal] ?? 0;
}
