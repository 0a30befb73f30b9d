/** List commands: RPUSH, LPUSH, LPOP, RPOP, LINDEX, LRANGE, LLEN, LREM, LPOS. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { parseInteger } from "../parse.js";
import { ERR, fail, type Reply } from "../reply.js";

const list = (ctx: CommandContext, key: string): string[] | undefined => ctx.ks.get(key, "list")?.data;

function push(left: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const l = ctx.ks.getOrCreate(argv[1] as string, "list", () => ({ type: "list", data: [] })).data;
    for (const value of argv.slice(2)) {
      if (left) l.unshift(value);
      else l.push(value);
    }
    return l.length;
  };
}

function pop(left: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    if (argv.length > 3) fail(ERR.syntax);
    const key = argv[1] as string;
    let count: number | undefined;
    if (argv[2] !== undefined) {
      count = parseInteger(argv[2], "ERR value is out of range, must be positive");
      if (count < 0) fail("ERR value is out of range, must be positive");
    }
    const l = list(ctx, key);
    if (!l) return null;
    if (count === undefined) {
      const value = left ? l.shift() : l.pop();
      ctx.ks.dropIfEmpty(key);
      return value ?? null;
    }
    const taken = left ? l.splice(0, count) : l.splice(Math.max(0, l.length - count)).reverse();
    ctx.ks.dropIfEmpty(key);
    return taken;
  };
}

/** A Redis list index (negative counts from the end) as a 0-based position. */
const position = (index: number, length: number): number => (index < 0 ? length + index : index);

function lpos(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key, element] = argv as [string, string, string];
  let rank = 1;
  let count: number | undefined;
  let maxLen = 0;
  for (let i = 3; i < argv.length; i += 2) {
    const opt = (argv[i] as string).toUpperCase();
    const value = argv[i + 1];
    if (value === undefined) fail(ERR.syntax);
    if (opt === "RANK") {
      rank = parseInteger(value as string);
      if (rank === 0) {
        fail("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
      }
    } else if (opt === "COUNT") {
      count = parseInteger(value as string);
      if (count < 0) fail("ERR COUNT can't be negative");
    } else if (opt === "MAXLEN") {
      maxLen = parseInteger(value as string);
      if (maxLen < 0) fail("ERR MAXLEN can't be negative");
    } else fail(ERR.syntax);
  }
  const l = list(ctx, key);
  const matches: number[] = [];
  if (l) {
    const wanted = count === undefined ? 1 : count === 0 ? Infinity : count;
    let skip = Math.abs(rank) - 1;
    const forward = rank > 0;
    for (let n = 0; n < l.length && matches.length < wanted; n++) {
      if (maxLen > 0 && n >= maxLen) break;
      const i = forward ? n : l.length - 1 - n;
      if (l[i] !== element) continue;
      if (skip > 0) { skip--; continue; }
      matches.push(i);
    }
  }
  if (count === undefined) return matches[0] ?? null;
  return matches;
}

export const listCommands: CommandSpec[] = [
  command("rpush", -3, push(false), ["write"]),
  command("lpush", -3, push(true), ["write"]),
  command("lpop", -2, pop(true), ["write"]),
  command("rpop", -2, pop(false), ["write"]),
  command("llen", 2, (ctx, [, key]) => list(ctx, key as string)?.length ?? 0),
  command("lindex", 3, (ctx, [, key, index]) => {
    const l = list(ctx, key as string);
    if (!l) return null;
    const i = parseInteger(index as string);
    return l[position(i, l.length)] ?? null;
  }),
  command("lrange", 4, (ctx, [, key, startText, stopText]) => {
    const start0 = parseInteger(startText as string);
    const stop0 = parseInteger(stopText as string);
    const l = list(ctx, key as string);
    if (!l) return [];
    const start = Math.max(0, position(start0, l.length));
    const stop = Math.min(l.length - 1, position(stop0, l.length));
    return start > stop ? [] : l.slice(start, stop + 1);
  }),
  command("lrem", 4, (ctx, [, key, countText, element]) => {
    const count = parseInteger(countText as string);
    const l = list(ctx, key as string);
    if (!l) return 0;
    let removed = 0;
    const limit = count === 0 ? Infinity : Math.abs(count);
    if (count >= 0) {
      for (let i = 0; i < l.length && removed < limit;) {
        if (l[i] === element) { l.splice(i, 1); removed++; } else i++;
      }
    } else {
      for (let i = l.length - 1; i >= 0 && removed < limit; i--) {
        if (l[i] === element) { l.splice(i, 1); removed++; }
      }
    }
    ctx.ks.dropIfEmpty(key as string);
    return removed;
  }, ["write"]),
  command("lpos", -3, lpos),
];
