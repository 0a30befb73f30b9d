/**
 * The fencing guard: writes to a protected resource in Redis that only go through when their
 * fencing token is at least the highest one the resource has seen, each applied exactly once. A
 * holder that was paused past its lease (GC, SIGSTOP, a slow disk) and wakes up believing it still
 * holds the lock is refused.
 *
 * The same pattern in SQL keeps the highest token next to the data:
 * `UPDATE stock SET units = $1, fence = $2 WHERE id = $3 AND fence <= $2` and treats "0 rows
 * updated" as "a newer holder has written: stop".
 */
import type { Endpoint } from "./adapters/endpoint.js";
import type { RedisArg } from "./adapters/types.js";
import { InvalidArgumentError, UnsupportedError } from "./errors.js";
import type { Ids } from "./ids.js";
import type { KeySpace } from "./keys.js";
import { scripts } from "./protocol/scripts.js";
import { checkKey } from "./validate.js";

/** Outcome of a guarded write. */
export type GuardedWrite =
  | { readonly written: true; readonly reply: unknown }
  | { readonly written: false; readonly highestToken: bigint };

/** How long a resource remembers its highest token after the last guarded write (7 days). */
export const GUARD_RETENTION_MS = 7 * 86_400_000;

const COMMANDS = new Set(["SET", "DEL", "INCRBY", "DECRBY", "HSET", "HDEL", "HINCRBY", "RPUSH", "LPUSH",
  "SADD", "SREM", "ZADD", "ZREM", "PEXPIRE", "APPEND", "XADD"]);

/** A client inside your own database transaction (a node-postgres `Client` or `PoolClient`). */
export interface TransactionClient {
  /** Runs one statement in the client's open transaction. */
  query(config: { text: string; values?: unknown[] }): Promise<unknown>;
}

/** How a guard on a store other than Redis checks a token where the data lives. */
export type TransactionCheck = (client: TransactionClient, token: bigint) => Promise<void>;

/** A lease as a guard on etcd takes it (a `Lease` from `acquire()` or `withLock()`). */
export interface FencingLease {
  readonly key: string;
  readonly fencingToken: bigint;
}

/** Outcome of `commit()` on etcd: the transaction's responses, or nothing written. */
export type GuardedCommit =
  | { readonly written: true; readonly responses: readonly object[] }
  | { readonly written: false };

/** How a guard on etcd runs a transaction fenced by a lease. */
export type LeaseCommit = (lease: FencingLease, operations: readonly object[]) => Promise<GuardedCommit>;

const INTERNAL = Symbol("surelock.guard");

/**
 * Guards one resource. In a Cluster, every data key written through the guard must hash to the
 * resource's slot: name it with the resource in braces, for example `{stock:42}:units`.
 */
export class FencingGuard {
  /** The resource's name. */
  readonly resource: string;
  /** Redis: where guarded writes go (undefined on PostgreSQL, which checks in your transaction). */
  readonly #endpoint: Endpoint | undefined;
  readonly #check: TransactionCheck | undefined;
  readonly #commit: LeaseCommit | undefined;
  readonly #key: string;
  /** This guard's writer id, and the sequence number of its writes: a replayed write is applied once. */
  readonly #writer: string;
  #seq = 0;

  private constructor(token: typeof INTERNAL, on: Endpoint | TransactionCheck | { commit: LeaseCommit }, keys: KeySpace, resource: string, ids: Ids) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.guard()");
    this.resource = resource;
    this.#check = typeof on === "function" ? on : undefined;
    this.#commit = typeof on === "object" && "commit" in on ? on.commit : undefined;
    this.#endpoint = typeof on === "object" && !("commit" in on) ? on : undefined;
    this.#key = keys.guard(resource);
    this.#writer = ids.id();
  }

  /** @internal Use `Surelock.guard()`. */
  static _create(endpoint: Endpoint, keys: KeySpace, resource: string, ids: Ids): FencingGuard {
    return new FencingGuard(INTERNAL, endpoint, keys, resource, ids);
  }

  /** @internal A guard checked inside the user's transaction (PostgreSQL). Use `Surelock.guard()`. */
  static _createChecked(check: TransactionCheck, keys: KeySpace, resource: string, ids: Ids): FencingGuard {
    return new FencingGuard(INTERNAL, check, keys, resource, ids);
  }

  /** @internal A guard that commits etcd transactions fenced by a lease. Use `Surelock.guard()`. */
  static _createCommitted(commit: LeaseCommit, keys: KeySpace, resource: string, ids: Ids): FencingGuard {
    return new FencingGuard(INTERNAL, { commit }, keys, resource, ids);
  }

  /** Redis's endpoint, or UnsupportedError naming what to use instead. */
  #redis(what: string): Endpoint {
    if (this.#endpoint) return this.#endpoint;
    throw new UnsupportedError(this.#commit
      ? `guard.${what}() on etcd: write in a transaction fenced by your lease with guard.commit(lease, operations)`
      : `guard.${what}() on PostgreSQL: check the token inside your own transaction with guard.check(client, token)`);
  }

  /**
   * etcd: runs `operations` (etcd3 request ops: `{ request_put }`, `{ request_delete_range }`,
   * `{ request_range }`) in one etcd transaction that goes through only while `lease` holds its
   * lock: the Txn compares the holder key's creation revision, which is the lease's fencing token.
   * Resolves `{ written: true, responses }`, or `{ written: false }` with nothing written once the
   * lease was lost or taken over (a lease known lost sends nothing). A ConnectionError may or may
   * not have been applied. On Redis and PostgreSQL, UnsupportedError.
   */
  async commit(lease: FencingLease, operations: readonly object[]): Promise<GuardedCommit> {
    if (!this.#commit) {
      throw new UnsupportedError(this.#endpoint
        ? "guard.commit() on Redis: write through the guard with guard.write(token, command, key, ...args)"
        : "guard.commit() on PostgreSQL: check the token inside your own transaction with guard.check(client, token)");
    }
    if (!Array.isArray(operations) || operations.length === 0 || operations.some((o) => typeof o !== "object" || o === null)) {
      throw new InvalidArgumentError("operations", operations, "a non-empty array of etcd request ops ({ request_put }, { request_delete_range }, { request_range })");
    }
    return this.#commit(lease, operations);
  }

  /**
   * PostgreSQL: records `token` for the resource inside the transaction `client` is in (your own
   * `pg` client, between your BEGIN and COMMIT), and resolves when no newer token was recorded;
   * otherwise rejects with FencedError (`ERR_SURELOCK_FENCED`) and the transaction is aborted: roll
   * it back. Two transactions racing on one resource are ordered by the database (a row lock): the
   * later waits for the earlier to end. On Redis, UnsupportedError (use `write()`).
   */
  async check(client: TransactionClient, token: bigint): Promise<void> {
    if (!this.#check) {
      throw new UnsupportedError(this.#commit
        ? "guard.check() on etcd: write in a transaction fenced by your lease with guard.commit(lease, operations)"
        : "guard.check() on Redis: write through the guard with guard.write(token, command, key, ...args)");
    }
    return this.#check(client, token);
  }

  /**
   * Runs `command key ...args` (one of SET, DEL, INCRBY, DECRBY, HSET, HDEL, HINCRBY, RPUSH, LPUSH,
   * SADD, SREM, ZADD, ZREM, PEXPIRE, APPEND, XADD) only if `token` is at least the highest token
   * seen for this resource, and records `token` as the highest: one atomic step, applied once even
   * if the client sends it again after a lost reply. A call that rejects with ConnectionError may
   * or may not have been applied (once).
   */
  async write(token: bigint, command: string, key: string, ...args: RedisArg[]): Promise<GuardedWrite> {
    if (typeof token !== "bigint" || token < 0n) throw new InvalidArgumentError("token", token, "a fencing token (a non-negative bigint)");
    if (typeof command !== "string" || !COMMANDS.has(command.toUpperCase())) {
      throw new InvalidArgumentError("command", command, `one of ${[...COMMANDS].join(", ")}`);
    }
    checkKey("key", key);
    for (const [i, arg] of args.entries()) {
      if (typeof arg !== "string" && !(typeof arg === "number" && Number.isFinite(arg))) {
        throw new InvalidArgumentError(`args[${i}]`, arg, "a string or a finite number");
      }
      if (typeof arg === "string" && !arg.isWellFormed()) throw new InvalidArgumentError(`args[${i}]`, arg, "a well-formed Unicode string");
    }
    const endpoint = this.#redis("write");
    const outcome = await endpoint.run(scripts.guardWrite.call(
      { guard: this.#key, data: key },
      { token: token.toString(), writer: this.#writer, seq: ++this.#seq, keep: GUARD_RETENTION_MS, window: endpoint.timeoutMs * 2, command },
      { args },
    ));
    if (outcome.status === "written") return { written: true, reply: outcome.reply };
    if (outcome.status === "refused") return { written: false, highestToken: outcome.highestToken };
    // Only the late resend of an older write of ours can answer this; nobody waits for it.
    return { written: false, highestToken: token };
  }

  /** The highest token that has written to this resource, or null if none has (within retention). */
  async highestToken(): Promise<bigint | null> {
    const reply = await this.#redis("highestToken").command(["HGET", this.#key, "t"], this.#key);
    return reply === null || reply === undefined ? null : BigInt(String(reply));
  }
}
