/**
 * The data commands MemoryRedis has: those surelock's scripts call, those the fencing guard
 * writes with, and those a test reads them back with. Options a script or the guard never sends
 * answer "not supported by MemoryRedis" rather than being half implemented.
 */
import { command, type CommandContext, type CommandSpec } from "./command.js";
import { globMatch } from "./glob.js";
import { formatDouble, inInt64, parseBound, parseDouble, parseInt64, parseInteger, type Bound } from "./parse.js";
import { ERR, fail, OK, StatusReply, unsupported, type Reply } from "./reply.js";

type ZEntry = { member: string; score: number };
const text = (ctx: CommandContext, key: string): string | null => ctx.ks.get(key, "string")?.data ?? null;
const hash = (ctx: CommandContext, key: string): Map<string, string> | undefined => ctx.ks.get(key, "hash")?.data;
const list = (ctx: CommandContext, key: string): string[] => ctx.ks.get(key, "list")?.data ?? [];
const members = (ctx: CommandContext, key: string): Set<string> | undefined => ctx.ks.get(key, "set")?.data;
const zset = (ctx: CommandContext, key: string): Map<string, number> | undefined => ctx.ks.get(key, "zset")?.data;
const stream = (ctx: CommandContext, key: string) => ctx.ks.get(key, "stream")?.data;
/** A sorted set's members by score, then member bytes. */
const ordered = (ctx: CommandContext, key: string): ZEntry[] =>
  [...(zset(ctx, key) ?? [])].map(([member, score]) => ({ member, score })).sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : 1));
const within = (min: Bound, max: Bound) => (e: ZEntry): boolean =>
  (min.exclusive ? e.score > min.value : e.score >= min.value) && (max.exclusive ? e.score < max.value : e.score <= max.value);
/** The entries between two score bounds (checked before the key is read, as Redis does). */
const inRange = (ctx: CommandContext, key: string, min: string, max: string): ZEntry[] =>
  ((test) => ordered(ctx, key).filter(test))(within(parseBound(min), parseBound(max)));
const scored = (ctx: CommandContext, entries: ZEntry[], withScores: boolean): Reply =>
  withScores ? entries.flatMap((e) => [e.member, formatDouble(e.score, ctx.server.shortestDoubles)]) : entries.map((e) => e.member);
/** A Redis index (negative counts from the end) as a 0-based position. */
const position = (index: string, length: number): number => (parseInteger(index) < 0 ? length + parseInteger(index) : parseInteger(index));
/** The items from `start` to `stop`, both checked (as Redis does) before the key is read. */
const range = <T>(start: string, stop: string, read: () => T[]): T[] => {
  [start, stop].forEach((i) => parseInteger(i));
  const items = read();
  return items.slice(Math.max(0, position(start, items.length)), Math.max(0, position(stop, items.length) + 1));
};
/** Removes the members `remove` says it removed; a container left empty goes, as Redis never keeps one. */
const removing = (ctx: CommandContext, key: string, remove: (member: string) => boolean | undefined, from: readonly string[]): number => {
  const removed = from.filter((m) => remove(m)).length;
  ctx.ks.dropIfEmpty(key);
  return removed;
};

/** SET with NX, XX, GET, KEEPTTL, EX and PX, checked as Redis 7 checks them. */
function set(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key, value] = argv as [string, string, string];
  const options = new Set<string>();
  let ttlMs: bigint | undefined;
  for (let i = 3; i < argv.length; i++) {
    const option = (argv[i] as string).toUpperCase();
    if (/^(EXAT|PXAT)$/.test(option)) unsupported(`SET ${option}`);
    const unit = /^(EX|PX)$/.test(option) && i + 1 < argv.length ? option : undefined;
    if (!/^(NX|XX|GET|KEEPTTL)$/.test(option) && !unit) fail(ERR.syntax);
    options.add(unit ? "TTL" : option);
    if (unit) {
      const n = parseInt64(argv[++i] as string);
      if (n <= 0n || (unit === "EX" && n > (1n << 63n) / 1000n)) fail("ERR invalid expire time in 'set' command");
      ttlMs = unit === "EX" ? n * 1000n : n;
    }
  }
  if ((options.has("NX") && options.has("XX")) || (options.has("KEEPTTL") && options.has("TTL"))) fail(ERR.syntax);
  const old = options.has("GET") ? text(ctx, key) : null;
  const found = ctx.ks.entry(key) !== undefined;
  if ((options.has("NX") && found) || (options.has("XX") && !found)) return options.has("GET") ? old : null;
  ctx.ks.put(key, { type: "string", data: value }, options.has("KEEPTTL"));
  const entry = ctx.ks.entry(key);
  if (entry && ttlMs !== undefined) entry.expiresAt = ctx.now() + Number(ttlMs);
  return options.has("GET") ? old : OK;
}

function incrBy(ctx: CommandContext, key: string, by: bigint): Reply {
  const current = text(ctx, key);
  const next = (current === null ? 0n : parseInt64(current)) + by;
  if (!inInt64(next)) fail(ERR.overflow);
  ctx.ks.put(key, { type: "string", data: next.toString() }, true);
  return Number(next);
}

/** EXPIRE, PEXPIRE, PEXPIREAT (without NX XX GT LT). */
const expire = (name: string, scale: bigint, absolute: boolean) => (ctx: CommandContext, argv: readonly string[]): Reply => {
  if (argv.length > 3) unsupported(`${name.toUpperCase()} ${argv[3]}`);
  const given = parseInt64(argv[2] as string);
  const at = given * scale + (absolute ? 0n : BigInt(ctx.now()));
  if (given > (1n << 63n) / scale || !inInt64(at)) fail(`ERR invalid expire time in '${name}' command`);
  const entry = ctx.ks.entry(argv[1] as string);
  if (!entry) return 0;
  if (at <= BigInt(ctx.now())) ctx.ks.delete(argv[1] as string);
  else entry.expiresAt = Number(at);
  return 1;
};

/** TTL, PTTL, PEXPIRETIME: -2 no key, -1 no expiry. */
const ttl = (of: (expiresAt: number, now: number) => number) => (ctx: CommandContext, [, key]: readonly string[]): Reply => {
  const entry = ctx.ks.entry(key as string);
  return !entry ? -2 : entry.expiresAt === undefined ? -1 : of(entry.expiresAt, ctx.now());
};

function zadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const flags = new Set<string>();
  let i = 2;
  for (; i < argv.length && /^(NX|XX|CH|GT|LT|INCR)$/i.test(argv[i] as string); i++) flags.add((argv[i] as string).toUpperCase());
  for (const f of ["GT", "LT", "INCR"]) if (flags.has(f)) unsupported(`ZADD ${f}`);
  const rest = argv.slice(i);
  if (rest.length === 0 || rest.length % 2 !== 0) fail(ERR.syntax);
  if (flags.has("NX") && flags.has("XX")) fail("ERR XX and NX options at the same time are not compatible");
  const pairs: [number, string][] = [];
  for (let j = 0; j < rest.length; j += 2) pairs.push([parseDouble(rest[j] as string), rest[j + 1] as string]);
  if (flags.has("XX") && !zset(ctx, argv[1] as string)) return 0;
  const z = ctx.ks.getOrCreate(argv[1] as string, "zset", () => ({ type: "zset", data: new Map() })).data;
  let [added, changed] = [0, 0];
  for (const [value, member] of pairs) {
    const current = z.get(member);
    if (current === undefined ? flags.has("XX") : flags.has("NX") || current === value) continue;
    z.set(member, value);
    if (current === undefined) added++;
    else changed++;
  }
  ctx.ks.dropIfEmpty(argv[1] as string);
  return flags.has("CH") ? added + changed : added;
}

function zrangeByScore(ctx: CommandContext, argv: readonly string[]): Reply {
  let withScores = false;
  let [offset, count] = [0, -1];
  for (let j = 4; j < argv.length; j++) {
    const opt = (argv[j] as string).toUpperCase();
    if (opt === "WITHSCORES") withScores = true;
    else if (opt === "LIMIT" && j + 2 < argv.length) [offset, count] = [parseInteger(argv[++j] as string), parseInteger(argv[++j] as string)];
    else fail(ERR.syntax);
  }
  const entries = inRange(ctx, argv[1] as string, argv[2] as string, argv[3] as string);
  // A negative offset skips everything (Redis counts it down past zero).
  return scored(ctx, offset < 0 ? [] : entries.slice(offset, count < 0 ? undefined : offset + count), withScores);
}

const INVALID_ID = "ERR Invalid stream ID specified as stream command argument";
const idOf = (id: string): [number, number] => {
  const m = /^(\d+)(?:-(\d+))?$/.exec(id);
  return m ? [Number(m[1]), Number(m[2] ?? 0)] : fail(INVALID_ID);
};
const after = (a: readonly [number, number], b: readonly [number, number]): boolean => a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/** XADD with an auto (`*`) or explicit id; no trimming. */
function xadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key, idText] = argv as [string, string, string];
  if (/^(NOMKSTREAM|MAXLEN|MINID)$/i.test(idText)) unsupported(`XADD ${idText.toUpperCase()}`);
  if (argv.length % 2 !== 1) fail("ERR wrong number of arguments for 'xadd' command");
  const last = stream(ctx, key)?.last ?? [0, 0];
  const id: [number, number] = idText === "*" ? (ctx.now() > last[0] ? [ctx.now(), 0] : [last[0], last[1] + 1]) : idOf(idText);
  if (id[0] === 0 && id[1] === 0) fail("ERR The ID specified in XADD must be greater than 0-0");
  if (!after(id, last)) fail("ERR The ID specified in XADD is equal or smaller than the target stream top item");
  const s = ctx.ks.getOrCreate(key, "stream", () => ({ type: "stream", data: { entries: [], last: [0, 0] } })).data;
  s.entries.push([`${id[0]}-${id[1]}`, argv.slice(3)]);
  s.last = id;
  return `${id[0]}-${id[1]}`;
}

const push = (left: boolean) => (ctx: CommandContext, argv: readonly string[]): number => {
  const l = ctx.ks.getOrCreate(argv[1] as string, "list", () => ({ type: "list", data: [] })).data;
  for (const value of argv.slice(2)) l[left ? "unshift" : "push"](value);
  return l.length;
};

export const dataCommands: CommandSpec[] = [
  // Strings.
  command("get", 2, (ctx, [, key]) => text(ctx, key as string)),
  command("set", -3, set),
  command("incr", 2, (ctx, [, key]) => incrBy(ctx, key as string, 1n)),
  command("decr", 2, (ctx, [, key]) => incrBy(ctx, key as string, -1n)),
  command("incrby", 3, (ctx, [, key, by]) => incrBy(ctx, key as string, parseInt64(by as string))),
  command("decrby", 3, (ctx, [, key, by]) => incrBy(ctx, key as string, -parseInt64(by as string))),
  command("append", 3, (ctx, [, key, value]) => {
    const data = (text(ctx, key as string) ?? "") + (value as string);
    ctx.ks.put(key as string, { type: "string", data }, true);
    return data.length;
  }),
  // Keys.
  command("del", -2, (ctx, argv) => argv.slice(1).filter((k) => ctx.ks.delete(k)).length),
  command("exists", -2, (ctx, argv) => argv.slice(1).filter((k) => ctx.ks.entry(k) !== undefined).length),
  command("type", 2, (ctx, [, key]) => new StatusReply(ctx.ks.entry(key as string)?.value.type ?? "none")),
  command("expire", -3, expire("expire", 1000n, false)),
  command("pexpire", -3, expire("pexpire", 1n, false)),
  command("pexpireat", -3, expire("pexpireat", 1n, true)),
  command("ttl", 2, ttl((at, now) => Math.floor((Math.max(0, at - now) + 500) / 1000))),
  command("pttl", 2, ttl((at, now) => Math.max(0, at - now))),
  command("pexpiretime", 2, ttl((at) => at)),
  command("persist", 2, (ctx, [, key]) => {
    const entry = ctx.ks.entry(key as string);
    if (entry?.expiresAt === undefined) return 0;
    entry.expiresAt = undefined;
    return 1;
  }),
  command("keys", 2, (ctx, [, pattern]) => [...ctx.ks.live()].map(([k]) => k).filter((k) => globMatch(pattern as string, k))),
  command("dbsize", 1, (ctx) => ctx.ks.size),
  command("flushall", -1, (ctx, argv) => {
    if (argv.length > 2 || (argv[1] !== undefined && !/^(A?SYNC)$/i.test(argv[1]))) fail(ERR.syntax);
    ctx.ks.clear();
    return OK;
  }),
  // Hashes.
  command("hget", 3, (ctx, [, key, field]) => hash(ctx, key as string)?.get(field as string) ?? null),
  command("hset", -4, (ctx, argv) => {
    if (argv.length % 2 !== 0) fail("ERR wrong number of arguments for 'hset' command");
    const h = ctx.ks.getOrCreate(argv[1] as string, "hash", () => ({ type: "hash", data: new Map() })).data;
    let added = 0;
    for (let i = 2; i < argv.length; i += 2) {
      if (!h.has(argv[i] as string)) added++;
      h.set(argv[i] as string, argv[i + 1] as string);
    }
    return added;
  }),
  command("hdel", -3, (ctx, argv) => removing(ctx, argv[1] as string, (f) => hash(ctx, argv[1] as string)?.delete(f), argv.slice(2))),
  command("hmget", -3, (ctx, argv) => argv.slice(2).map((f) => hash(ctx, argv[1] as string)?.get(f) ?? null)),
  command("hincrby", 4, (ctx, [, key, field, by]) => {
    const increment = parseInt64(by as string);
    const h = ctx.ks.getOrCreate(key as string, "hash", () => ({ type: "hash", data: new Map() })).data;
    const current = h.get(field as string);
    const next = (current === undefined ? 0n : parseInt64(current, ERR.hashNotInteger)) + increment;
    if (!inInt64(next)) fail(ERR.overflow);
    h.set(field as string, next.toString());
    return Number(next);
  }),
  command("hexists", 3, (ctx, [, key, field]) => (hash(ctx, key as string)?.has(field as string) ? 1 : 0)),
  command("hlen", 2, (ctx, [, key]) => hash(ctx, key as string)?.size ?? 0),
  command("hgetall", 2, (ctx, [, key]) => [...(hash(ctx, key as string) ?? [])].flat()),
  command("hkeys", 2, (ctx, [, key]) => [...(hash(ctx, key as string)?.keys() ?? [])]),
  // Lists.
  command("rpush", -3, push(false)),
  command("lpush", -3, push(true)),
  command("lpop", 2, (ctx, [, key]) => {
    const value = list(ctx, key as string).shift();
    ctx.ks.dropIfEmpty(key as string);
    return value ?? null;
  }),
  command("llen", 2, (ctx, [, key]) => list(ctx, key as string).length),
  command("lindex", 3, (ctx, [, key, index]) => {
    const l = ctx.ks.get(key as string, "list")?.data;
    return l ? (l.at(parseInteger(index as string)) ?? null) : null;
  }),
  command("lrange", 4, (ctx, [, key, start, stop]) => range(start as string, stop as string, () => list(ctx, key as string))),
  command("lrem", 4, (ctx, [, key, countText, element]) => {
    const count = parseInteger(countText as string);
    const l = list(ctx, key as string);
    const at = l.flatMap((v, i) => (v === element ? [i] : []));
    const doomed = (count < 0 ? at.reverse() : at).slice(0, count === 0 ? undefined : Math.abs(count));
    for (const i of doomed.sort((a, b) => b - a)) l.splice(i, 1);
    ctx.ks.dropIfEmpty(key as string);
    return doomed.length;
  }),
  command("linsert", 5, (ctx, [, key, where, pivot, element]) => {
    const side = (where as string).toUpperCase();
    if (side !== "BEFORE" && side !== "AFTER") fail("ERR syntax error");
    const l = ctx.ks.get(key as string, "list")?.data;
    if (!l) return 0;
    const at = l.indexOf(pivot as string);
    if (at < 0) return -1;
    l.splice(side === "BEFORE" ? at : at + 1, 0, element as string);
    return l.length;
  }),
  command("lpos", -3, (ctx, argv) => {
    if (argv.length > 3) unsupported(`LPOS ${argv[3]}`);
    const i = list(ctx, argv[1] as string).indexOf(argv[2] as string);
    return i < 0 ? null : i;
  }),
  // Sets.
  command("sadd", -3, (ctx, argv) => {
    const s = ctx.ks.getOrCreate(argv[1] as string, "set", () => ({ type: "set", data: new Set() })).data;
    const before = s.size;
    for (const member of argv.slice(2)) s.add(member);
    return s.size - before;
  }),
  command("srem", -3, (ctx, argv) => removing(ctx, argv[1] as string, (m) => members(ctx, argv[1] as string)?.delete(m), argv.slice(2))),
  command("smembers", 2, (ctx, [, key]) => [...(members(ctx, key as string) ?? [])]),
  command("scard", 2, (ctx, [, key]) => members(ctx, key as string)?.size ?? 0),
  // Sorted sets.
  command("zadd", -4, zadd),
  command("zrem", -3, (ctx, argv) => removing(ctx, argv[1] as string, (m) => zset(ctx, argv[1] as string)?.delete(m), argv.slice(2))),
  command("zscore", 3, (ctx, [, key, member]) => {
    const s = zset(ctx, key as string)?.get(member as string);
    return s === undefined ? null : formatDouble(s, ctx.server.shortestDoubles);
  }),
  command("zcard", 2, (ctx, [, key]) => zset(ctx, key as string)?.size ?? 0),
  command("zcount", 4, (ctx, [, key, min, max]) => inRange(ctx, key as string, min as string, max as string).length),
  command("zrange", -4, (ctx, argv) => {
    const options = argv.slice(4).map((a) => a.toUpperCase());
    if (options.some((o) => o !== "WITHSCORES")) unsupported(`ZRANGE ${options.join(" ")}`);
    return scored(ctx, range(argv[2] as string, argv[3] as string, () => ordered(ctx, argv[1] as string)), options.length > 0);
  }),
  command("zrangebyscore", -4, zrangeByScore),
  command("zremrangebyscore", 4, (ctx, [, key, min, max]) =>
    removing(ctx, key as string, (m) => zset(ctx, key as string)?.delete(m), inRange(ctx, key as string, min as string, max as string).map((e) => e.member))),
  // Streams.
  command("xadd", -5, xadd),
  command("xlen", 2, (ctx, [, key]) => stream(ctx, key as string)?.entries.length ?? 0),
  command("xrange", 4, (ctx, [, key, start, end]) => {
    const from: readonly [number, number] = start === "-" ? [0, 0] : idOf(start as string);
    const to: readonly [number, number] = end === "+" ? [Infinity, Infinity] : idOf(end as string);
    return (stream(ctx, key as string)?.entries ?? []).filter(([id]) => !after(from, idOf(id)) && !after(idOf(id), to));
  }),
];
