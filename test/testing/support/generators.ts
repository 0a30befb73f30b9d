/**
 * Seeded random material for the differential test: command sequences over a small keyspace (so
 * commands meet each other's keys, types and expiries), in the commands and options MemoryRedis
 * has. Everything is drawn from one PRNG, so a seed reproduces a run.
 */

/** mulberry32: small, fast, good enough to pick test inputs. */
export class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  some<T>(items: readonly T[], lo: number, hi: number): T[] {
    return Array.from({ length: this.int(lo, hi) }, () => this.pick(items));
  }
}

export const KEYS = ["k1", "k2", "k3", "h1", "l1", "s1", "z1", "x1", "{t}:a", "{t}:b"];
const FIELDS = ["f", "g", "h", "o", "n", "t"];
const VALUES = ["0", "1", "-1", "42", "7", "abc", "", "3.5", "-0", "01", " 5", "1e3", "9223372036854775807", "-9223372036854775808",
  "9223372036854775808", "x y", "caf\u00c3\u00a9", "inf", "-inf", "nan", "0x10", "1732000000123456"];
const SCORES = ["0", "1", "2", "-1", "2.5", "1e3", "inf", "-inf", "+inf", "(1", "(2.5", "abc", "0.1", "1732000000123", "nan"];
const INTS = ["0", "1", "2", "-1", "-2", "3", "10", "100", "-100", "abc", "1.5", "9223372036854775807"];
const TTLS = ["1", "2", "5", "100", "1000", "60000", "0", "-1", "abc", "9223372036854775807"];

type Gen = (r: Random) => string[];

const key = (r: Random): string => r.pick(KEYS);
const value = (r: Random): string => r.pick(VALUES);
const int = (r: Random): string => r.pick(INTS);
const opt = (r: Random, p: number, ...words: string[]): string[] => (r.chance(p) ? words : []);

const COMMANDS: Gen[] = [
  (r) => ["GET", key(r)],
  (r) => ["SET", key(r), value(r), ...r.some([["NX"], ["XX"], ["GET"], ["KEEPTTL"], ["EX", r.pick(TTLS)], ["PX", r.pick(TTLS)], ["BOGUS"]], 0, 2).flat()],
  (r) => [r.pick(["INCR", "DECR"]), key(r)],
  (r) => [r.pick(["INCRBY", "DECRBY"]), key(r), int(r)],
  (r) => ["APPEND", key(r), value(r)],
  (r) => ["DEL", ...r.some(KEYS, 1, 3)],
  (r) => ["EXISTS", ...r.some(KEYS, 1, 3)],
  (r) => ["TYPE", key(r)],
  (r) => [r.pick(["EXPIRE", "PEXPIRE"]), key(r), r.pick(TTLS)],
  (r) => [r.pick(["PTTL", "TTL", "PERSIST", "PEXPIRETIME"]), key(r)],
  (r) => ["HSET", key(r), ...r.some(FIELDS, 1, 3).flatMap((f) => [f, value(r)])],
  (r) => ["HGET", key(r), r.pick(FIELDS)],
  (r) => ["HDEL", key(r), ...r.some(FIELDS, 1, 3)],
  (r) => ["HMGET", key(r), ...r.some(FIELDS, 1, 3)],
  (r) => ["HINCRBY", key(r), r.pick(FIELDS), int(r)],
  (r) => [r.pick(["HEXISTS"]), key(r), r.pick(FIELDS)],
  (r) => [r.pick(["HLEN", "HGETALL", "HKEYS"]), key(r)],
  (r) => [r.pick(["RPUSH", "LPUSH"]), key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => ["LPOP", key(r)],
  (r) => ["LINDEX", key(r), int(r)],
  (r) => ["LRANGE", key(r), int(r), int(r)],
  (r) => ["LLEN", key(r)],
  (r) => ["LREM", key(r), r.pick(["0", "1", "-1", "2"]), r.pick(VALUES.slice(0, 8))],
  (r) => ["LPOS", key(r), r.pick(VALUES.slice(0, 8))],
  (r) => ["SADD", key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => ["SREM", key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => [r.pick(["SMEMBERS", "SCARD"]), key(r)],
  (r) => ["ZADD", key(r), ...r.some(["NX", "XX", "CH"], 0, 2), ...r.some(["a", "b", "c", "d"], 1, 2).flatMap((m) => [r.pick(SCORES.filter((s) => !s.startsWith("("))), m])],
  (r) => ["ZREM", key(r), ...r.some(["a", "b", "c", "d"], 1, 2)],
  (r) => ["ZSCORE", key(r), r.pick(["a", "b", "c", "d"])],
  (r) => ["ZCARD", key(r)],
  (r) => ["ZCOUNT", key(r), r.pick(SCORES), r.pick(SCORES)],
  (r) => ["ZRANGE", key(r), r.pick(["0", "1", "-1", "-2", "5", "-9"]), r.pick(["0", "1", "-1", "10", "-9"]), ...opt(r, 0.5, "WITHSCORES")],
  (r) => ["ZRANGEBYSCORE", key(r), r.pick(SCORES), r.pick(SCORES), ...r.some([["WITHSCORES"], ["LIMIT", r.pick(["0", "1", "-1"]), r.pick(["1", "-1", "0"])]], 0, 2).flat()],
  (r) => ["ZREMRANGEBYSCORE", key(r), r.pick(SCORES), r.pick(SCORES)],
  (r) => ["XADD", key(r), "*", r.pick(FIELDS), value(r)],
  (r) => [r.pick(["XLEN"]), key(r)],
  (r) => ["KEYS", r.pick(["*", "k*", "?1", "[hz]1", "{t}*", "x"])],
  (r) => ["PING", ...opt(r, 0.3, "hi")],
  (r) => ["ECHO", value(r)],
  (r) => ["PUBLISH", r.pick(["ch", "other"]), value(r)],
  (r) => ["SPUBLISH", r.pick(["ch", "other"]), value(r)],
  (r) => [r.pick(["get", "Set", "hGeT", "GET"]), ...r.some(KEYS, 0, 3)],
];

/** One random command (its arguments as byte strings). */
export const randomCommand = (r: Random): string[] => r.pick(COMMANDS)(r);
