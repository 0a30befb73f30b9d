/**
 * Seeded random material for the differential test: command sequences over a small keyspace
 * (so commands meet each other's keys, types and expiries) and small Lua programs that use the
 * language and libraries the interpreter implements. Everything is drawn from one PRNG, so a
 * seed reproduces a run.
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
  (r) => ["SET", key(r), value(r), ...r.some([["NX"], ["XX"], ["GET"], ["KEEPTTL"], ["EX", r.pick(TTLS)], ["PX", r.pick(TTLS)], ["PXAT", String(Date.now() + 100000)], ["BOGUS"]], 0, 2).flat()],
  (r) => [r.pick(["INCR", "DECR"]), key(r)],
  (r) => [r.pick(["INCRBY", "DECRBY"]), key(r), int(r)],
  (r) => ["APPEND", key(r), value(r)],
  (r) => ["DEL", ...r.some(KEYS, 1, 3)],
  (r) => ["EXISTS", ...r.some(KEYS, 1, 3)],
  (r) => ["TYPE", key(r)],
  (r) => [r.pick(["EXPIRE", "PEXPIRE"]), key(r), r.pick(TTLS), ...r.some(["NX", "XX", "GT", "LT"], 0, 1)],
  (r) => [r.pick(["PTTL", "TTL", "PERSIST", "PEXPIRETIME", "EXPIRETIME"]), key(r)],
  (r) => ["HSET", key(r), ...r.some(FIELDS, 1, 3).flatMap((f) => [f, value(r)])],
  (r) => ["HGET", key(r), r.pick(FIELDS)],
  (r) => ["HDEL", key(r), ...r.some(FIELDS, 1, 3)],
  (r) => ["HMGET", key(r), ...r.some(FIELDS, 1, 3)],
  (r) => ["HINCRBY", key(r), r.pick(FIELDS), int(r)],
  (r) => [r.pick(["HEXISTS"]), key(r), r.pick(FIELDS)],
  (r) => [r.pick(["HLEN", "HGETALL", "HKEYS"]), key(r)],
  (r) => [r.pick(["RPUSH", "LPUSH"]), key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => [r.pick(["LPOP", "RPOP"]), key(r), ...opt(r, 0.3, r.pick(["0", "1", "2", "5", "-1"]))],
  (r) => ["LINDEX", key(r), int(r)],
  (r) => ["LRANGE", key(r), int(r), int(r)],
  (r) => ["LLEN", key(r)],
  (r) => ["LREM", key(r), r.pick(["0", "1", "-1", "2"]), r.pick(VALUES.slice(0, 8))],
  (r) => ["LPOS", key(r), r.pick(VALUES.slice(0, 8)), ...r.some([["RANK", r.pick(["1", "-1", "2", "0"])], ["COUNT", r.pick(["0", "1", "2", "-1"])], ["MAXLEN", r.pick(["0", "1", "3"])]], 0, 2).flat()],
  (r) => ["SADD", key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => ["SREM", key(r), ...r.some(VALUES.slice(0, 8), 1, 3)],
  (r) => [r.pick(["SMEMBERS", "SCARD"]), key(r)],
  (r) => ["ZADD", key(r), ...r.some(["NX", "XX", "GT", "LT", "CH", "INCR"], 0, 2), ...r.some(["a", "b", "c", "d"], 1, 2).flatMap((m) => [r.pick(SCORES.filter((s) => !s.startsWith("("))), m])],
  (r) => ["ZREM", key(r), ...r.some(["a", "b", "c", "d"], 1, 2)],
  (r) => ["ZSCORE", key(r), r.pick(["a", "b", "c", "d"])],
  (r) => ["ZCARD", key(r)],
  (r) => ["ZCOUNT", key(r), r.pick(SCORES), r.pick(SCORES)],
  (r) => ["ZRANGE", key(r), r.pick(["0", "1", "-1", "-2", "5"]), r.pick(["0", "1", "-1", "10"]), ...r.some(["WITHSCORES", "REV"], 0, 2)],
  (r) => ["ZRANGE", key(r), r.pick(SCORES), r.pick(SCORES), "BYSCORE", ...r.some([["REV"], ["WITHSCORES"], ["LIMIT", r.pick(["0", "1", "-1"]), r.pick(["1", "2", "-1", "0"])]], 0, 2).flat()],
  (r) => ["ZRANGE", key(r), r.pick(["-", "[a", "(b", "[c"]), r.pick(["+", "[c", "(d", "[a"]), "BYLEX", ...opt(r, 0.3, "LIMIT", "0", "2")],
  (r) => ["ZRANGEBYSCORE", key(r), r.pick(SCORES), r.pick(SCORES), ...r.some([["WITHSCORES"], ["LIMIT", r.pick(["0", "1", "-1"]), r.pick(["1", "-1", "0"])]], 0, 2).flat()],
  (r) => ["ZREMRANGEBYSCORE", key(r), r.pick(SCORES), r.pick(SCORES)],
  (r) => ["XADD", key(r), ...opt(r, 0.2, "NOMKSTREAM"), ...opt(r, 0.2, "MAXLEN", r.pick(["1", "2", "=", "5"])), "*", r.pick(FIELDS), value(r)],
  (r) => [r.pick(["XLEN"]), key(r)],
  (r) => ["KEYS", r.pick(["*", "k*", "?1", "[hz]1", "{t}*", "x"])],
  (r) => ["PING", ...opt(r, 0.3, "hi")],
  (r) => ["ECHO", value(r)],
  (r) => ["PUBLISH", r.pick(["ch", "other"]), value(r)],
  (r) => ["SPUBLISH", r.pick(["ch", "other"]), value(r)],
  (r) => [r.pick(["get", "Set", "hGeT", "nosuch", "GET"]), ...r.some(KEYS, 0, 3)],
  (r) => r.pick([["MULTI"], ["EXEC"], ["DISCARD"]]),
];

/** One random command (its arguments as byte strings). */
export const randomCommand = (r: Random): string[] => r.pick(COMMANDS)(r);

// ---------------------------------------------------------------------------------------------
// Lua programs

const LUA_VALUES = ["0", "1", "-7", "3.5", "1e15", "2^53", "1/3", "'abc'", "'12'", "' 0x1F '", "''", "'a,b,,c'", "'x y z'", "true", "false", "nil", "{}", "{1, 2, 3}", "{a = 1}"];
const PATTERNS = ["'%d+'", "'(%a+)'", "'^a'", "'c$'", "'[%w_]+'", "'%s*(.-)%s*$'", "'(%d)(%d)'", "'b+'", "'[^,]+'", "'.-'", "'%%'", "'(()b)'", "'%bxy'", "'[a-c]'", "'%f[%w]%w+'", "'('", "'[a'", "'%'"];
const SUBJECTS = ["'abc'", "'a1b22c333'", "'  trim me  '", "'key:123'", "'x(y)z'", "'a,b,,c'", "'hello world'", "''", "'%'"];

const luaExpr = (r: Random, depth = 0): string => {
  if (depth > 2 || r.chance(0.3)) return r.pick(LUA_VALUES);
  const a = (): string => luaExpr(r, depth + 1);
  return r.pick<() => string>([
    () => `(${a()} ${r.pick(["+", "-", "*", "/", "%", "^", "..", "==", "~=", "<", "<=", ">", ">=", "and", "or"])} ${a()})`,
    () => `(${r.pick(["-", "not ", "#"])}${a()})`,
    () => `tonumber(${a()})`,
    () => `str(${a()})`,
    () => `type(${a()})`,
    () => `math.${r.pick(["floor", "ceil", "abs"])}(${a()})`,
    () => `math.${r.pick(["max", "min"])}(${a()}, ${a()})`,
    () => `string.format(${r.pick(["'%d'", "'%5.2f'", "'%s|%s'", "'%x'", "'%06d'", "'%g'", "'%q'", "'%-4s|'", "'%e'", "'%c'", "'%i%%'", "'%z'"])}, ${a()}, ${a()})`,
    () => `string.${r.pick(["len", "upper", "lower", "reverse"])}(${a()})`,
    () => `string.sub(${a()}, ${r.pick(["1", "2", "-1", "-3", "0", "10"])}, ${r.pick(["1", "2", "-1", "-2", "5"])})`,
    () => `string.rep(${a()}, ${r.pick(["0", "1", "3", "-1"])})`,
    () => `string.byte(${a()}, ${r.pick(["1", "-1", "2"])})`,
    () => `string.find(${r.pick(SUBJECTS)}, ${r.pick(PATTERNS)}${r.chance(0.3) ? `, ${r.pick(["1", "2", "-2", "10"])}` : ""}${r.chance(0.2) ? ", true" : ""})`,
    () => `string.match(${r.pick(SUBJECTS)}, ${r.pick(PATTERNS)})`,
    () => `string.gsub(${r.pick(SUBJECTS)}, ${r.pick(PATTERNS)}, ${r.pick(["'<%0>'", "'%1'", "'x'", "''", "function(s) return s:upper() end", "{abc = 'T'}", "'%%'"])}${r.chance(0.3) ? ", 1" : ""})`,
    () => `select(${r.pick(["'#'", "1", "2", "-1"])}, ${a()}, ${a()})`,
    () => `(${a()})`,
    () => `cjson.encode(${r.pick(["{1, 2, 'x'}", "{a = {1, 2}}", "'q\"/'", "1.5", "{}", "{[1] = 1, [3] = 3}", "{true, false}", "cjson.null"])})`,
    () => `cjson.decode(${r.pick(["'[1, 2, 3]'", "'{\"a\": [true, null]}'", "'\"\\\\u00e9\"'", "'1e2'", "'[1,'", "'x'"])})`,
  ])();
};

const luaStatement = (r: Random, depth: number): string => {
  const e = (): string => luaExpr(r);
  const k = `KEYS[${r.int(1, 2)}]`;
  return r.pick<() => string>([
    () => `local v = ${e()}; out[#out + 1] = str(v)`,
    () => `out[#out + 1] = ${e()}`,
    () => `local ok, err = pcall(function() return ${e()} end); out[#out + 1] = tostring(ok)`,
    () => `out[#out + 1] = redis.call('SET', ${k}, ${e()})`,
    () => `out[#out + 1] = redis.call('INCRBY', ${k}, ${r.pick(["1", "5", "-2", "2^53", "0.5"])})`,
    () => `out[#out + 1] = redis.pcall(${r.pick(["'GET'", "'HGET'", "'INCR'", "'LPUSH'", "'NOSUCH'", "'SUBSCRIBE'"])}, ${k}${r.chance(0.5) ? ", 'f'" : ""})`,
    () => `redis.call('HSET', ${k}, 'f', ${e()}); out[#out + 1] = redis.call('HGETALL', ${k})`,
    () => `out[#out + 1] = redis.call('ZADD', ${k}, ${r.pick(["1", "2.5", "-1", "1e3"])}, 'm'); out[#out + 1] = redis.call('ZRANGE', ${k}, 0, -1, 'WITHSCORES')`,
    () => `out[#out + 1] = redis.call('RPUSH', ${k}, ${e()}, 'x'); out[#out + 1] = redis.call('LRANGE', ${k}, 0, -1)`,
    () => `local t = redis.call('TIME'); out[#out + 1] = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`,
    // No PTTL of a key the same script just gave a TTL: a real script's clock runs while it
    // runs (under load, past a millisecond), the two in-memory runs' clocks stand still.
    () => `out[#out + 1] = redis.call('PEXPIRE', ${k}, ${r.pick(["100", "5000", "1"])})`,
    () => `out[#out + 1] = redis.call('PTTL', ${k}) > 0`,
    () => `local t = {${r.some(["5", "3", "9", "1", "7"], 0, 5).join(", ")}}; table.sort(t${r.chance(0.5) ? ", function(a, b) return a > b end" : ""}); out[#out + 1] = table.concat(t, ',')`,
    () => `local t = {'a', 'b', 'c'}; table.insert(t, ${r.pick(["'d'", "1, 'z'", "2, 'y'"])}); out[#out + 1] = table.remove(t${r.chance(0.5) ? ", 1" : ""}); out[#out + 1] = #t`,
    () => `for w in string.gmatch(${r.pick(SUBJECTS)}, ${r.pick(PATTERNS.slice(0, 14))}) do out[#out + 1] = w end`,
    () => `local n = 0; for i = ${r.pick(["1", "3", "0"])}, ${r.pick(["5", "1", "-1"])}, ${r.pick(["1", "2", "-1"])} do n = n + i end; out[#out + 1] = n`,
    () => `local i = 0; while i < ${r.int(0, 4)} do i = i + 1 end; repeat i = i - 1 until i <= 0; out[#out + 1] = i`,
    () => `local function f(...) return select('#', ...), ... end; out[#out + 1] = (f(${r.some(["1", "nil", "'x'"], 0, 3).join(", ")}))`,
    () => `local acc = {}; for i, v in ipairs({${r.some(["'a'", "'b'", "1", "2"], 0, 4).join(", ")}}) do acc[#acc + 1] = i .. '=' .. v end; out[#out + 1] = table.concat(acc, ' ')`,
    () => `local fs = {}; for i = 1, 3 do fs[i] = function() return i * 10 end end; out[#out + 1] = fs[2]()`,
    () => (depth < 2 ? `if ${e()} then ${luaStatement(r, depth + 1)} else ${luaStatement(r, depth + 1)} end` : "out[#out + 1] = 'leaf'"),
    () => `out[#out + 1] = ${r.pick(["unpack({1, 2, 3})", "#ARGV", "ARGV[1]", "KEYS[2]", "redis.sha1hex('abc')", "redis.status_reply('FINE')", "redis.error_reply('BAD thing')"])}`,
  ])();
};

/** A small Lua program that collects values in `out` and returns it (or one of the ways to end a script). */
export function randomLua(r: Random): string {
  const body = Array.from({ length: r.int(1, 5) }, () => luaStatement(r, 0)).join("\n");
  const ending = r.pick([
    "return out", "return out", "return out", "return #out", "return out[1]", "return {err = 'CUSTOM failure'}",
    "return {ok = 'DONE'}", "error('stopped')", "error({err = 'ERR tabled'})", "return true", "return 3.99", "return {1, {2, {3}}, nil, 4}",
  ]);
  // tostring of a table or function shows an address, which differs between any two runs.
  const prelude = "local out = {}\nlocal function str(v) if type(v) == 'table' or type(v) == 'function' then return type(v) end return tostring(v) end";
  return `${prelude}\n${body}\n${ending}`;
}
