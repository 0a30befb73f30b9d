/**
 * The data: one map of keys to typed values, each with an optional expiry instant (server ms).
 * Expiry is lazy, as far as anyone can tell from outside: a key whose instant has passed is
 * removed the moment something looks at it, and is never seen again.
 */
import { ERR, fail } from "./reply.js";

/** A sorted set: scores by member, plus the members in (score, member bytes) order. */
export class SortedSet {
  readonly scores = new Map<string, number>();
  /** Sorted by score, then member. */
  readonly order: { member: string; score: number }[] = [];

  get size(): number {
    return this.scores.size;
  }

  /** Position of the first entry at or after (score, member). */
  #position(score: number, member: string): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const e = this.order[mid] as { member: string; score: number };
      if (e.score < score || (e.score === score && e.member < member)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(member: string, score: number): void {
    this.remove(member);
    this.scores.set(member, score);
    this.order.splice(this.#position(score, member), 0, { member, score });
  }

  remove(member: string): boolean {
    const score = this.scores.get(member);
    if (score === undefined) return false;
    this.scores.delete(member);
    this.order.splice(this.#position(score, member), 1);
    return true;
  }

  /** 0-based rank of the first entry whose score is above `min` (or at it, when inclusive). */
  firstAbove(min: number, inclusive: boolean): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const s = (this.order[mid] as { score: number }).score;
      if (s < min || (!inclusive && s === min)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export interface StreamEntry {
  readonly ms: number;
  readonly seq: number;
  readonly fields: readonly string[];
}

export interface Stream {
  readonly entries: StreamEntry[];
  last: { ms: number; seq: number };
}

export type RedisValue =
  | { readonly type: "string"; data: string }
  | { readonly type: "hash"; readonly data: Map<string, string> }
  | { readonly type: "list"; data: string[] }
  | { readonly type: "set"; readonly data: Set<string> }
  | { readonly type: "zset"; readonly data: SortedSet }
  | { readonly type: "stream"; readonly data: Stream };

export type RedisType = RedisValue["type"];
type ValueOf<T extends RedisType> = Extract<RedisValue, { type: T }>;

export interface Entry {
  value: RedisValue;
  /** Server ms after which the key is gone; undefined: no expiry. */
  expiresAt: number | undefined;
  /** Creation order, for SCAN cursors that survive deletions. */
  readonly seq: number;
}

export class Keyspace {
  readonly #entries = new Map<string, Entry>();
  #seq = 0;
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
    const existing = this.get(key, type);
    if (existing) return existing;
    const value = empty();
    this.put(key, value);
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
    this.#entries.set(key, { value, expiresAt: undefined, seq: ++this.#seq });
  }

  delete(key: string): boolean {
    if (!this.entry(key)) return false;
    this.#entries.delete(key);
    return true;
  }

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

  get size(): number {
    return [...this.live()].length;
  }

  clear(): void {
    this.#entries.clear();
  }
}
