/**
 * The fencing guard: writes to a protected resource in Redis that only go through when their
 * fencing token is at least the highest one the resource has seen. A holder that was paused past
 * its lease (GC, SIGSTOP, a slow disk) and wakes up believing it still holds the lock is refused.
 *
 * The same pattern in SQL keeps the highest token next to the data:
 * `UPDATE stock SET units = $1, fence = $2 WHERE id = $3 AND fence <= $2` and treats "0 rows
 * updated" as "a newer holder has written: stop".
 */
import type { Endpoint } from "./adapters/endpoint.js";
import type { RedisArg } from "./adapters/types.js";
import { ConnectionError, InvalidArgumentError } from "./errors.js";
import type { KeySpace } from "./keys.js";
import { LUA } from "./scripts/index.js";
import { checkKey } from "./validate.js";

/** Outcome of a guarded write. */
export type GuardedWrite =
  | { readonly written: true; readonly reply: unknown }
  | { readonly written: false; readonly highestToken: bigint };

/** How long a resource remembers its highest token after the last guarded write (default 7 days). */
export const GUARD_RETENTION_MS = 7 * 86_400_000;

const COMMANDS = new Set(["SET", "DEL", "INCRBY", "DECRBY", "HSET", "HDEL", "HINCRBY", "RPUSH", "LPUSH",
  "SADD", "SREM", "ZADD", "ZREM", "PEXPIRE", "APPEND", "XADD"]);

/**
 * Guards one resource. In a Cluster, every data key written through the guard must hash to the
 * resource's slot: name it with the resource in braces, for example `{stock:42}:units`.
 */
export class FencingGuard {
  /** The resource's name. */
  readonly resource: string;
  readonly #endpoint: Endpoint;
  readonly #highestKey: string;

  /** @internal Use `Surelock.guard()`. */
  constructor(endpoint: Endpoint, keys: KeySpace, resource: string) {
    this.resource = resource;
    this.#endpoint = endpoint;
    this.#highestKey = keys.guard(resource);
  }

  /**
   * Runs `command key ...args` (one of SET, DEL, INCRBY, DECRBY, HSET, HDEL, HINCRBY, RPUSH, LPUSH,
   * SADD, SREM, ZADD, ZREM, PEXPIRE, APPEND, XADD) only if `token` is at least the highest token
   * seen for this resource, and records `token` as the highest: one atomic step.
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
    }
    const reply = await this.#endpoint.run(LUA.guardWrite, [this.#highestKey, key],
      [token.toString(), GUARD_RETENTION_MS, command, ...args]);
    if (!Array.isArray(reply) || (reply[0] !== 1 && reply[0] !== 0)) {
      throw new ConnectionError(`unexpected reply from guard-write.lua: ${JSON.stringify(reply)}`);
    }
    return reply[0] === 1
      ? { written: true, reply: reply[1] }
      : { written: false, highestToken: BigInt(String(reply[1])) };
  }

  /** The highest token that has written to this resource, or null if none has (within retention). */
  async highestToken(): Promise<bigint | null> {
    const reply = await this.#endpoint.command(["GET", this.#highestKey], this.#highestKey);
    return reply === null || reply === undefined ? null : BigInt(String(reply));
  }
}
