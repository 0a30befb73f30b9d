/**
 * The data: one map of keys to typed values, each with an optional expiry instant (server ms).
 * Expiry is lazy, as far as anyone can tell from outside: a key whose instant has passed is
 * removed the moment something looks at it, and is never seen again.
 */
import { ERR, fail } from "./reply.js";

/** A stream: entries as [id, fields], and the last id given out. */
export interface Stream {
  readonly entries: [string, readonly string[]][];
  last: readonly [number, number];
}

export type RedisValue =
  | { readonly type: "string"; data: string }
  | { readonly type: "hash"; readonly data: Map<string, string> }
  | { readonly type: "list"; data: string[] }
  | { readonly type: "set"; readonly data: Set<string> }
  | { readonly type: "zset"; readonly data: Map<string, number> }
  | { readonly type: "stream"; readonly data: Stream };

export type RedisType = RedisValue["type"];
type ValueOf<T extends RedisType> = Extract<RedisValue, { type: T }>;

export interface Entry {
  value: RedisValue;
  /** Server ms after which the key is gone; undefined: no expiry. */
  expiresAt: number | undefined;
}

export class Keyspace {
  readonly #entries = new Map<string, Entry>();
  /** The server's time in ms, as expiry sees it. */
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** The live entry of `key`, dropping it first if it has expired. */
  entry(key: string): Entry | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    // Redis: a key is expired once now > its instant, so at the instant itself it still exists.
    if (e.expiresAt !== undefined && this.#now() > e.expiresAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return e;
  }

  /** The value of `key` if it has type `type`; undefined if missing; WRONGTYPE otherwise. */
  get<T extends RedisType>(key: string, type: T): ValueOf<T> | undefined {
    const e = this.entry(key);
    if (!e) return undefined;
    if (e.value.type !== type) fail(ERR.wrongType);
    return e.value as ValueOf<T>;
  }

  /** The value of `key`, created empty (without expiry) if missing. */
  getOrCreate<T extends RedisType>(key: string, type: T, empty: () => ValueOf<T>): ValueOf<T> {
    const value = this.get(key, type) ?? empty();
    if (!this.#entries.has(key)) this.put(key, value);
    return value;
  }

  /** Stores `value` under `key` with no expiry (or the old key's, with keepTtl), replacing what was there. */
  put(key: string, value: RedisValue, keepTtl = false): void {
    const old = this.entry(key);
    if (old && keepTtl) {
      old.value = value;
      return;
    }
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: undefined });
  }

  /** DEL of one key: whether it was there (alive). */
  delete(key: string): boolean { return this.entry(key) !== undefined && this.#entries.delete(key); }

  /** Removes a container that became empty, as Redis never keeps an empty one. */
  dropIfEmpty(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    const v = e.value;
    const size = v.type === "string" ? 1 : v.type === "list" ? v.data.length : v.type === "stream" ? 1 : v.data.size;
    if (size === 0) this.#entries.delete(key);
  }

  /** Every live key with its entry, in creation order. */
  *live(): IterableIterator<[string, Entry]> {
    for (const key of [...this.#entries.keys()]) {
      const e = this.entry(key);
      if (e) yield [key, e];
    }
  }

  /** How many live keys there are. */
  get size(): number { return [...this.live()].length; }

  /** FLUSHALL. */
  clear(): void { this.#entries.clear(); }
}
