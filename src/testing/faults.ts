/** Fault hooks of MemoryRedis: a Gate, and the faults an Interceptor may answer a command with. */

/** One command as the interceptor sees it. */
export interface CommandCall {
  /** Upper-case command name, such as "EVALSHA". */
  readonly name: string;
  /** The arguments after the name, as strings. */
  readonly args: readonly string[];
  /** The server's client id of the connection that sent it. */
  readonly connection: number;
  /** For EVAL and EVALSHA: the script's SHA1. */
  readonly sha?: string;
}

/** A barrier a test opens; `reached` resolves when the first command arrives at it. */
export class Gate {
  readonly #arrivals: CommandCall[] = [];
  #openers: (() => void)[] = [];
  #isOpen = false;
  #notifyReached: ((call: CommandCall) => void) | undefined;
  /** The first command that arrived at this gate. */
  readonly reached: Promise<CommandCall>;

  constructor() {
    this.reached = new Promise((resolve) => { this.#notifyReached = resolve; });
  }

  /** Whether `open()` was called. */
  get isOpen(): boolean { return this.#isOpen; }

  /** Commands that arrived so far. */
  get arrivals(): readonly CommandCall[] { return this.#arrivals; }

  /** Lets every held command (and every later one) through. */
  open(): void {
    if (this.#isOpen) return;
    this.#isOpen = true;
    const openers = this.#openers;
    this.#openers = [];
    for (const go of openers) go();
  }

  /** @internal Waits at the gate. */
  pass(call: CommandCall): Promise<void> {
    this.#arrivals.push(call);
    this.#notifyReached?.(call);
    if (this.#isOpen) return Promise.resolve();
    return new Promise((resolve) => this.#openers.push(resolve));
  }
}

/**
 * What an Interceptor may answer a command with (a test sets one per connection; it sees every
 * command before it runs):
 *
 * - `{ kind: "gate", gate, stage }`: hold the command until `gate.open()`, either before it runs
 *   (`"execution"`) or after it ran, holding its reply (`"reply"`). Commands behind it on the same
 *   connection wait too, as on a socket.
 * - `{ kind: "drop-reply", then }`: run it, lose the reply; the caller's promise rejects with a
 *   connection reset (`"reset"`) or never settles (`"hang"`).
 * - `{ kind: "replay" }`: run it twice (a resend after a lost reply, or a duplicated packet); the
 *   caller gets the second reply, as a client that resent it would.
 * - `{ kind: "fail" }`: do not run it; the caller's promise rejects with a connection error.
 */
export type Fault =
  | { readonly kind: "gate"; readonly gate: Gate; readonly stage: "execution" | "reply" }
  | { readonly kind: "drop-reply"; readonly then: "reset" | "hang" }
  | { readonly kind: "replay" }
  | { readonly kind: "fail"; readonly message?: string };

/** Decides a fault for a command, or undefined to let it pass normally. */
export type Interceptor = (call: CommandCall) => Fault | undefined;

/** What a dropped reply or a failed command rejects with: the shape of a socket error. */
export class MemoryConnectionError extends Error {
  readonly code: string;
  constructor(message: string, code = "ECONNRESET") {
    super(message);
    this.name = "MemoryConnectionError";
    this.code = code;
  }
}

/** An error reply from the in-memory server (ioredis calls its equivalent ReplyError). */
export class MemoryReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplyError";
  }
}
