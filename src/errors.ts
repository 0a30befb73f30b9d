/**
 * Typed errors. Every class carries a stable `code` (part of the public contract), its own name
 * (set explicitly: bundlers rename classes), and a process-wide brand, so `instanceof` also works
 * when both the ESM and the CJS build of surelock are loaded into one process.
 */

const BRAND = Symbol.for("surelock.error");

/**
 * Why a lease stopped being trustworthy. `closed`: the Surelock instance was closed while it was
 * held, and gave it back (a shutdown, not a loss: no `surelock:lost` event is published for it).
 */
export type LockLostReason = "taken" | "expired" | "unreachable" | "closed";

/** Base class of every error surelock throws. Match on `code`, which never changes. */
export class SurelockError extends Error {
  /** Stable machine-readable code, e.g. `ERR_SURELOCK_TIMEOUT`. */
  readonly code: string;

  /** @internal */
  static readonly CODE: string | undefined = undefined;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = "SurelockError";
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** Brand check: true for errors from any loaded copy of surelock with the class's code. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== "object" || value === null) return false;
    if ((value as Record<symbol, unknown>)[BRAND] !== true) return false;
    const expected = (this as { CODE?: string | undefined }).CODE;
    return expected === undefined || (value as { code?: unknown }).code === expected;
  }
}

/**
 * `acquire` waited `timeout` ms without getting the lock. When Redis did not answer during the
 * wait (no reply yet to its attempt, or its ticket's last refresh failed), `cause` is the
 * `ConnectionError` (or `QuorumError`): an outage, not contention.
 */
export class LockTimeoutError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_TIMEOUT`. */
  static override readonly CODE = "ERR_SURELOCK_TIMEOUT";
  /** The user's key. */
  readonly key: string;
  /** How long the caller actually waited, in ms (monotonic clock). */
  readonly waitedMs: number;
  /** The timeout that was asked for, in ms. */
  readonly timeoutMs: number;

  /** `what` names what was waited for: a lock (the default), an election, a latch. */
  constructor(key: string, waitedMs: number, timeoutMs: number, what = "lock", options?: { cause?: unknown }) {
    const unanswered = options?.cause instanceof Error ? `; Redis did not answer: ${options.cause.message}` : "";
    super(
      LockTimeoutError.CODE,
      `timed out waiting for ${what} "${key}" after ${Math.round(waitedMs)} ms (timeout ${timeoutMs} ms)${unanswered}`,
      options,
    );
    this.name = "LockTimeoutError";
    this.key = key;
    this.waitedMs = waitedMs;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The lease is gone: taken by another owner, expired, unprovable while Redis was unreachable, or
 * given back by `close()`.
 */
export class LockLostError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_LOCK_LOST`. */
  static override readonly CODE = "ERR_SURELOCK_LOCK_LOST";
  /** The user's key. */
  readonly key: string;
  /**
   * `taken` (another hold holds it), `expired` (it ran out), `unreachable` (Redis could not
   * confirm it in time) or `closed` (`Surelock.close()` gave it back while it was held).
   */
  readonly reason: LockLostReason;

  constructor(key: string, reason: LockLostReason, detail?: string, options?: { cause?: unknown }) {
    super(LockLostError.CODE, `lock "${key}" was lost (${reason})${detail ? `: ${detail}` : ""}`, options);
    this.name = "LockLostError";
    this.key = key;
    this.reason = reason;
  }
}

/** Release or extend of a lock that this owner does not hold (for example, after it was released). */
export class LockNotHeldError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_NOT_HELD`. */
  static override readonly CODE = "ERR_SURELOCK_NOT_HELD";
  /** The user's key. */
  readonly key: string;

  constructor(key: string, detail: string) {
    super(LockNotHeldError.CODE, `lock "${key}" is not held by this owner: ${detail}`);
    this.name = "LockNotHeldError";
    this.key = key;
  }
}

/** One node's answer in quorum mode. */
export interface NodeOutcome {
  /** The node, as `host:port` or the adapter's name for it. */
  readonly node: string;
  /** Whether this node voted for the operation. */
  readonly ok: boolean;
  /** Why it did not, when it did not. */
  readonly error?: Error;
}

/**
 * Quorum mode: fewer nodes agreed than the operation needs (N/2+1, more for a semaphore of several
 * permits: docs/quorum.md). `nodes` lists every node's outcome.
 */
export class QuorumError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_QUORUM`. */
  static override readonly CODE = "ERR_SURELOCK_QUORUM";
  /** The user's key. */
  readonly key: string;
  /** Every node's outcome, in the order the clients were given. */
  readonly nodes: readonly NodeOutcome[];
  /** How many nodes had to agree. */
  readonly needed: number;

  /** `needed`: how many nodes had to agree, when not a majority. */
  constructor(key: string, operation: string, nodes: readonly NodeOutcome[], detail?: string, needed = Math.floor(nodes.length / 2) + 1) {
    const agreed = nodes.filter((n) => n.ok).length;
    const list = nodes.map((n) => `${n.node}: ${n.ok ? "ok" : (n.error?.message ?? "refused")}`).join("; ");
    super(
      QuorumError.CODE,
      `${operation} of "${key}" reached ${agreed} of ${nodes.length} nodes, ${needed} needed${detail ? ` (${detail})` : ""} [${list}]`,
    );
    this.name = "QuorumError";
    this.key = key;
    this.nodes = nodes;
    this.needed = needed;
  }
}

/** A bad argument; thrown before any I/O. Names the argument, the value and what was expected. */
export class InvalidArgumentError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_INVALID_ARGUMENT`. */
  static override readonly CODE = "ERR_SURELOCK_INVALID_ARGUMENT";
  /** The argument's name, e.g. `ttl` or `options.timeout`. */
  readonly argument: string;
  /** The value received. */
  readonly value: unknown;

  constructor(argument: string, value: unknown, expected: string) {
    super(InvalidArgumentError.CODE, `invalid ${argument}: expected ${expected}, received ${describe(value)}`);
    this.name = "InvalidArgumentError";
    this.argument = argument;
    this.value = value;
  }
}

/** Redis unreachable, failing over, or too slow. `cause` is the client's error, when there was one. */
export class ConnectionError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_CONNECTION`. */
  static override readonly CODE = "ERR_SURELOCK_CONNECTION";
  constructor(message: string, options?: { cause?: unknown }) {
    super(ConnectionError.CODE, message, options);
    this.name = "ConnectionError";
  }
}

/**
 * Redis answered with an error (a command the server does not have, a script error, an ACL that
 * refuses it): retrying will not help, the deployment or surelock itself needs a look. `cause` is
 * the client's error.
 */
export class ScriptError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_SCRIPT`. */
  static override readonly CODE = "ERR_SURELOCK_SCRIPT";
  constructor(message: string, options?: { cause?: unknown }) {
    super(ScriptError.CODE, message, options);
    this.name = "ScriptError";
  }
}

/**
 * Redis refused the client's credentials or permissions: a wrong password (`WRONGPASS`, or
 * "invalid password" from older servers), no password given (`NOAUTH`), or an ACL that denies a command, key or channel
 * surelock needs (`NOPERM`). Retrying will not help: fix the client's credentials or the ACL user
 * (docs/adapters.md, "Authentication and ACLs"). `cause` is the client's error.
 */
export class AuthError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_AUTH`. */
  static override readonly CODE = "ERR_SURELOCK_AUTH";
  constructor(message: string, options?: { cause?: unknown }) {
    super(AuthError.CODE, message, options);
    this.name = "AuthError";
  }
}

/** A deployment surelock cannot work with (for example a Cluster older than Redis 7). */
export class UnsupportedError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_UNSUPPORTED`. */
  static override readonly CODE = "ERR_SURELOCK_UNSUPPORTED";
  constructor(message: string) {
    super(UnsupportedError.CODE, message);
    this.name = "UnsupportedError";
  }
}

/** The call would wait for the caller itself (a read-write lock's reader asking for the write side). */
export class DeadlockError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_DEADLOCK`. */
  static override readonly CODE = "ERR_SURELOCK_DEADLOCK";
  /** The user's key. */
  readonly key: string;
  constructor(key: string, detail: string) {
    super(DeadlockError.CODE, `lock "${key}": ${detail}`);
    this.name = "DeadlockError";
    this.key = key;
  }
}

/** The lock exists in Redis with settings that differ from the caller's (a semaphore's permits). */
export class ConflictError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_CONFLICT`. */
  static override readonly CODE = "ERR_SURELOCK_CONFLICT";
  /** The user's key. */
  readonly key: string;
  constructor(key: string, detail: string) {
    super(ConflictError.CODE, `lock "${key}": ${detail}`);
    this.name = "ConflictError";
    this.key = key;
  }
}

/** The `Surelock` instance was closed. */
export class ClosedError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_CLOSED`. */
  static override readonly CODE = "ERR_SURELOCK_CLOSED";
  constructor(what = "this Surelock instance") {
    super(ClosedError.CODE, `${what} is closed`);
    this.name = "ClosedError";
  }
}

/**
 * A fencing check refused a write: a newer fencing token than the caller's was already recorded
 * for the resource, so the caller's lease was taken over. On PostgreSQL the check also aborted the
 * caller's transaction: roll it back.
 */
export class FencedError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_FENCED`. */
  static override readonly CODE = "ERR_SURELOCK_FENCED";
  /** The fenced resource. */
  readonly resource: string;
  /** The caller's token. */
  readonly token: bigint;
  /** The newer token already recorded for the resource. */
  readonly recorded: bigint;
  constructor(resource: string, token: bigint, recorded: bigint, options?: { cause?: unknown }) {
    super(FencedError.CODE, `write to "${resource}" fenced: token ${token} is older than the recorded ${recorded}`, options);
    this.name = "FencedError";
    this.resource = resource;
    this.token = token;
    this.recorded = recorded;
  }
}

/**
 * A store's schema cannot be used: it is missing and cannot be created (no privilege, or creation
 * is turned off), or a privilege on its tables or functions is missing. `cause` is the database's
 * error; retrying will not help until an operator grants the privilege or runs the migration.
 */
export class SchemaError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_SCHEMA`. */
  static override readonly CODE = "ERR_SURELOCK_SCHEMA";
  /** The schema's name. */
  readonly schema: string;
  constructor(schema: string, message: string, options?: { cause?: unknown }) {
    super(SchemaError.CODE, `schema "${schema}": ${message}`, options);
    this.name = "SchemaError";
    this.schema = schema;
  }
}

function describe(value: unknown): string {
  if (typeof value === "string") return `${JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)} (string)`;
  if (typeof value === "bigint") return `${value}n (bigint)`;
  if (typeof value === "number") return `${value} (number)`;
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}
