/**
 * The ioredis-shaped methods of MemoryRedis (`get`, `set`, `hgetall`, …, `call`), so that an app
 * that keeps one ioredis client for its data and its locks can be handed the double instead.
 * Arguments are flattened as ioredis flattens them (arrays; an object's fields and values, as in
 * `hset(key, { f: 1 })`), numbers are sent as their decimal text, and replies are ioredis's
 * (HGETALL answers an object). A command the double lacks rejects, saying so.
 */
import type { RedisArg } from "../adapters/types.js";

/** What an ioredis method takes: strings and numbers, arrays of them, or an object of fields and values. */
export type IoredisArg = RedisArg | Buffer | readonly (RedisArg | Buffer)[] | Readonly<Record<string, RedisArg>>;
type Method<R> = (...args: IoredisArg[]) => Promise<R>;

const NUMBERS = ["del", "exists", "incr", "incrby", "decr", "decrby", "append", "expire", "pexpire", "pexpireat", "ttl", "pttl",
  "persist", "hdel", "hincrby", "hexists", "hlen", "rpush", "lpush", "llen", "lrem", "sadd", "srem", "scard", "zadd", "zrem",
  "zcard", "zcount", "zremrangebyscore", "xlen", "publish", "dbsize"] as const;
const TEXTS = ["get", "set", "hget", "lpop", "lindex", "zscore", "xadd", "ping", "echo", "flushall", "type"] as const;
const LISTS = ["keys", "hmget", "lrange", "smembers", "zrange", "zrangebyscore", "xrange", "time"] as const;

/** The commands MemoryRedis answers in ioredis's shape; each sends `[NAME, ...flattened args]`. */
export type IoredisCommands = { [K in (typeof NUMBERS)[number]]: Method<number> } & { [K in (typeof TEXTS)[number]]: Method<string | null> } &
  { [K in (typeof LISTS)[number]]: Method<unknown[]> } & {
    /** The lpos of ioredis: the index of the first match, or null. */
    lpos: Method<number | null>;
    /** HGETALL as ioredis answers it: an object of fields and values. */
    hgetall: Method<Record<string, string>>;
    hset: Method<number>;
    /** Any command, as ioredis's `call(name, ...args)`. */
    call(command: string, ...args: IoredisArg[]): Promise<unknown>;
    /** What ioredis's quit() answers; the double has no connection to close. */
    quit(): Promise<"OK">;
    disconnect(): void;
  };

/** Arguments as ioredis sends them: flat, objects as their field/value pairs. */
export function flatten(args: readonly IoredisArg[]): RedisArg[] {
  return args.flatMap((a): RedisArg[] => {
    if (Buffer.isBuffer(a)) return [a.toString("utf8")];
    if (Array.isArray(a)) return flatten(a as IoredisArg[]);
    if (typeof a === "object" && a !== null) return Object.entries(a as Record<string, RedisArg>).flat();
    return [a as RedisArg];
  });
}

/** A base class whose methods are IoredisCommands over the subclass's `command`. */
export function ioredisShaped(): abstract new () => IoredisCommands & { command(args: readonly RedisArg[]): Promise<unknown> } {
  abstract class Shaped {
    abstract command(args: readonly RedisArg[]): Promise<unknown>;
  }
  const methods = Shaped.prototype as unknown as Record<string, (...args: IoredisArg[]) => unknown>;
  for (const name of [...NUMBERS, ...TEXTS, ...LISTS, "lpos", "hset"]) {
    methods[name] = function (this: Shaped, ...args: IoredisArg[]) {
      return this.command([name.toUpperCase(), ...flatten(args)]);
    };
  }
  methods.hgetall = async function (this: Shaped, key: IoredisArg) {
    const pairs = (await this.command(["HGETALL", ...flatten([key])])) as string[];
    return Object.fromEntries(pairs.flatMap((v, i) => (i % 2 === 0 ? [[v, pairs[i + 1]]] : [])));
  };
  methods.call = function (this: Shaped, command: IoredisArg, ...args: IoredisArg[]) {
    return this.command([String(command), ...flatten(args)]);
  };
  methods.quit = () => Promise.resolve("OK");
  methods.disconnect = () => undefined;
  return Shaped as never;
}
