/** Sorted-set commands: ZADD, ZREM, ZSCORE, ZCARD, ZCOUNT, ZRANGE, ZRANGEBYSCORE, ZREMRANGEBYSCORE. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { SortedSet } from "../keyspace.js";
import { formatDouble, parseBound, parseDouble, parseInteger, type Bound } from "../parse.js";
import { ERR, fail, type Reply } from "../reply.js";

const zset = (ctx: CommandContext, key: string): SortedSet | undefined => ctx.ks.get(key, "zset")?.data;
const score = (ctx: CommandContext, d: number): string => formatDouble(d, ctx.server.shortestDoubles);

function zadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1] as string;
  let i = 2;
  const flags = new Set<string>();
  for (; i < argv.length; i++) {
    const opt = (argv[i] as string).toUpperCase();
    if (!["NX", "XX", "GT", "LT", "CH", "INCR"].includes(opt)) break;
    flags.add(opt);
  }
  const rest = argv.slice(i);
  if (rest.length === 0 || rest.length % 2 !== 0) fail(ERR.syntax);
  const incr = flags.has("INCR");
  if (flags.has("NX") && flags.has("XX")) fail("ERR XX and NX options at the same time are not compatible");
  if ((flags.has("GT") && flags.has("NX")) || (flags.has("LT") && flags.has("NX")) || (flags.has("GT") && flags.has("LT"))) {
    fail("ERR GT, LT, and/or NX options at the same time are not compatible");
  }
  if (incr && rest.length > 2) fail("ERR INCR option supports a single increment-element pair");
  const pairs: [number, string][] = [];
  for (let j = 0; j < rest.length; j += 2) pairs.push([parseDouble(rest[j] as string), rest[j + 1] as string]);
  let z = zset(ctx, key);
  if (!z) {
    if (flags.has("XX")) return incr ? null : 0;
    z = ctx.ks.getOrCreate(key, "zset", () => ({ type: "zset", data: new SortedSet() })).data;
  }
  let added = 0;
  let updated = 0;
  let result: number | null = null;
  for (const [value, member] of pairs) {
    const current = z.scores.get(member);
    if (current !== undefined) {
      if (flags.has("NX")) continue;
      const next = incr ? current + value : value;
      if (Number.isNaN(next)) fail("ERR resulting score is not a number (NaN)");
      if ((flags.has("GT") && next <= current) || (flags.has("LT") && next >= current)) continue;
      result = next;
      if (next !== current) {
        z.add(member, next);
        updated++;
      }
    } else {
      if (flags.has("XX")) continue;
      z.add(member, value);
      result = value;
      added++;
    }
  }
  ctx.ks.dropIfEmpty(key);
  if (incr) return result === null ? null : score(ctx, result);
  return flags.has("CH") ? added + updated : added;
}

const aboveMin = (s: number, min: Bound): boolean => (min.exclusive ? s > min.value : s >= min.value);
const belowMax = (s: number, max: Bound): boolean => (max.exclusive ? s < max.value : s <= max.value);

interface LexBound {
  readonly value: string;
  readonly exclusive: boolean;
  /** -1: "-" (below everything), 1: "+" (above everything). */
  readonly infinite: -1 | 0 | 1;
}

function parseLex(s: string): LexBound {
  if (s === "-") return { value: "", exclusive: false, infinite: -1 };
  if (s === "+") return { value: "", exclusive: false, infinite: 1 };
  if (s.startsWith("(") || s.startsWith("[")) return { value: s.slice(1), exclusive: s.startsWith("("), infinite: 0 };
  return fail("ERR min or max not valid string range item");
}

function lexAbove(m: string, min: LexBound): boolean {
  if (min.infinite !== 0) return min.infinite < 0;
  return min.exclusive ? m > min.value : m >= min.value;
}

function lexBelow(m: string, max: LexBound): boolean {
  if (max.infinite !== 0) return max.infinite > 0;
  return max.exclusive ? m < max.value : m <= max.value;
}

/** ZRANGE and ZRANGEBYSCORE: one parser, as in Redis, with the range kind fixed for the latter. */
function zrange(byScoreCommand: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const key = argv[1] as string;
    let withScores = false;
    let offset = 0;
    let limit = -1;
    let hasLimit = false;
    let reverse = false;
    let kind: "rank" | "score" | "lex" = byScoreCommand ? "score" : "rank";
    for (let j = 4; j < argv.length; j++) {
      const opt = (argv[j] as string).toUpperCase();
      const left = argv.length - j - 1;
      if (opt === "WITHSCORES") withScores = true;
      else if (opt === "LIMIT" && left >= 2) {
        offset = parseInteger(argv[j + 1] as string);
        limit = parseInteger(argv[j + 2] as string);
        hasLimit = true;
        j += 2;
      } else if (!byScoreCommand && !reverse && opt === "REV") reverse = true;
      else if (!byScoreCommand && kind === "rank" && opt === "BYLEX") kind = "lex";
      else if (!byScoreCommand && kind === "rank" && opt === "BYSCORE") kind = "score";
      else fail(ERR.syntax);
    }
    if (hasLimit && kind === "rank") fail("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    if (withScores && kind === "lex") fail("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    // With REV, a score or lex range is given as max, min.
    const [minText, maxText] = reverse && kind !== "rank" ? [argv[3] as string, argv[2] as string] : [argv[2] as string, argv[3] as string];
    let picked: { member: string; score: number }[] = [];
    if (kind === "rank") {
      const start0 = parseInteger(minText);
      const stop0 = parseInteger(maxText);
      const z = zset(ctx, key);
      if (!z) return [];
      const n = z.size;
      let start = start0 < 0 ? n + start0 : start0;
      let stop = stop0 < 0 ? n + stop0 : stop0;
      if (start < 0) start = 0;
      if (start > stop || start >= n) return [];
      if (stop >= n) stop = n - 1;
      const ordered = reverse ? z.order.slice().reverse() : z.order;
      picked = ordered.slice(start, stop + 1);
    } else {
      type Item = { member: string; score: number };
      let atLeastMin: (e: Item) => boolean;
      let atMostMax: (e: Item) => boolean;
      if (kind === "score") {
        const min = parseBound(minText);
        const max = parseBound(maxText);
        atLeastMin = (e) => aboveMin(e.score, min);
        atMostMax = (e) => belowMax(e.score, max);
      } else {
        const min = parseLex(minText);
        const max = parseLex(maxText);
        atLeastMin = (e) => lexAbove(e.member, min);
        atMostMax = (e) => lexBelow(e.member, max);
      }
      const z = zset(ctx, key);
      if (!z) return [];
      if (offset > 0 && offset >= z.size) return [];
      // Redis walks from the first element past the near end of the range and stops at the first
      // one beyond the far end (for a lex range over unequal scores, that is all it promises).
      const [enter, stay] = reverse ? [atMostMax, atLeastMin] : [atLeastMin, atMostMax];
      const ordered = reverse ? z.order.slice().reverse() : z.order;
      const start = ordered.findIndex(enter);
      const matching: Item[] = [];
      for (let i = start; start >= 0 && i < ordered.length && stay(ordered[i] as Item); i++) matching.push(ordered[i] as Item);
      // A negative offset skips everything (Redis counts it down past zero).
      picked = offset < 0 ? [] : matching.slice(offset, limit < 0 ? undefined : offset + limit);
    }
    return withScores ? picked.flatMap((e) => [e.member, score(ctx, e.score)]) : picked.map((e) => e.member);
  };
}

export const zsetCommands: CommandSpec[] = [
  command("zadd", -4, zadd, ["write"]),
  command("zrem", -3, (ctx, argv) => {
    const z = zset(ctx, argv[1] as string);
    if (!z) return 0;
    const removed = argv.slice(2).filter((m) => z.remove(m)).length;
    ctx.ks.dropIfEmpty(argv[1] as string);
    return removed;
  }, ["write"]),
  command("zscore", 3, (ctx, [, key, member]) => {
    const s = zset(ctx, key as string)?.scores.get(member as string);
    return s === undefined ? null : score(ctx, s);
  }),
  command("zcard", 2, (ctx, [, key]) => zset(ctx, key as string)?.size ?? 0),
  command("zcount", 4, (ctx, [, key, minText, maxText]) => {
    const min = parseBound(minText as string);
    const max = parseBound(maxText as string);
    const z = zset(ctx, key as string);
    if (!z) return 0;
    return z.order.filter((e) => aboveMin(e.score, min) && belowMax(e.score, max)).length;
  }),
  command("zrange", -4, zrange(false)),
  command("zrangebyscore", -4, zrange(true)),
  command("zremrangebyscore", 4, (ctx, [, key, minText, maxText]) => {
    const min = parseBound(minText as string);
    const max = parseBound(maxText as string);
    const z = zset(ctx, key as string);
    if (!z) return 0;
    const doomed = z.order.filter((e) => aboveMin(e.score, min) && belowMax(e.score, max));
    for (const e of doomed) z.remove(e.member);
    ctx.ks.dropIfEmpty(key as string);
    return doomed.length;
  }, ["write"]),
];
