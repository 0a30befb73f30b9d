/**
 * RESP replies inside MemoryRedis: bulk strings are byte strings (one char per byte), integers
 * are numbers, nil is null, arrays nest; status and error replies are small classes.
 */

/** `+OK`-style reply. */
export class StatusReply {
  readonly status: string;
  constructor(status: string) {
    this.status = status;
  }
}

/** `-ERR ...`-style reply; `message` starts with the error code. */
export class ErrorReply {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

export type Reply = string | number | null | StatusReply | ErrorReply | readonly Reply[];

export const OK = new StatusReply("OK");

/** Thrown by a command handler to answer with an error (the keyspace is left as it was). */
export class CommandError extends Error {
  readonly reply: ErrorReply;
  constructor(message: string) {
    super(message);
    this.reply = new ErrorReply(message);
  }
}

export const ERR = {
  syntax: "ERR syntax error",
  notInteger: "ERR value is not an integer or out of range",
  notFloat: "ERR value is not a valid float",
  wrongType: "WRONGTYPE Operation against a key holding the wrong kind of value",
  overflow: "ERR increment or decrement would overflow",
  minMaxNotFloat: "ERR min or max is not a float",
  hashNotInteger: "ERR hash value is not an integer",
} as const;

export const fail = (message: string): never => {
  throw new CommandError(message);
};

/** The error for a command (or an option of one) Redis may have and MemoryRedis does not. */
export const unsupportedMessage = (what: string): string =>
  `ERR ${what} is not supported by MemoryRedis (surelock/testing has what surelock's scripts, its fencing guard and docs/testing.md use)`;
export const unsupported = (what: string): never => fail(unsupportedMessage(what));
