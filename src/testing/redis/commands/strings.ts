/** String commands: GET, SET, INCR/INCRBY/DECR/DECRBY, APPEND. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { inInt64, parseInt64 } from "../parse.js";
import { ERR, fail, OK, type Reply } from "../reply.js";

function get(ctx: CommandContext, key: string): string | null {
  return ctx.ks.get(key, "string")?.data ?? null;
}

/** SET's options, checked as Redis 7 does: each may appear once, and conflicting ones are a syntax error. */
function set(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key, value] = argv as [string, string, string];
  let nx = false, xx = false, withGet = false, keepTtl = false;
  let unit: "EX" | "PX" | "EXAT" | "PXAT" | undefined;
  let expireText: string | undefined;
  for (let i = 3; i < argv.length; i++) {
    const opt = (argv[i] as string).toUpperCase();
    const hasNext = i + 1 < argv.length;
    if (opt === "NX" && !xx) nx = true;
    else if (opt === "XX" && !nx) xx = true;
    else if (opt === "GET") withGet = true;
    else if (opt === "KEEPTTL" && !unit) keepTtl = true;
    // The same unit twice is allowed (the last one counts), two different ones are not.
    else if ((opt === "EX" || opt === "PX" || opt === "EXAT" || opt === "PXAT") && !keepTtl && (!unit || unit === opt) && hasNext) {
      unit = opt;
      expireText = argv[++i];
    } else fail(ERR.syntax);
  }
  let expiresAt: number | undefined;
  if (unit && expireText !== undefined) {
    const n = parseInt64(expireText);
    const seconds = unit === "EX" || unit === "EXAT";
    if (n <= 0n || (seconds && n > (1n << 63n) / 1000n)) fail("ERR invalid expire time in 'set' command");
    let ms = seconds ? n * 1000n : n;
    if (unit === "EX" || unit === "PX") ms += BigInt(ctx.now());
    if (ms <= 0n || !inInt64(ms)) fail("ERR invalid expire time in 'set' command");
    expiresAt = Number(ms);
  }
  const old = withGet ? get(ctx, key) : null;
  const found = ctx.ks.entry(key) !== undefined;
  if ((nx && found) || (xx && !found)) return withGet ? old : null;
  ctx.ks.put(key, { type: "string", data: value }, keepTtl);
  const entry = ctx.ks.entry(key);
  if (entry && expiresAt !== undefined) entry.expiresAt = expiresAt;
  // An instant already past removes the key at once.
  if (expiresAt !== undefined && expiresAt <= ctx.now()) ctx.ks.delete(key);
  return withGet ? old : OK;
}

function incrBy(ctx: CommandContext, key: string, by: bigint): Reply {
  const existing = ctx.ks.get(key, "string");
  let current = 0n;
  if (existing) {
    if (existing.data.length > 20) fail(ERR.notInteger);
    current = parseInt64(existing.data);
  }
  const next = current + by;
  if (!inInt64(next)) fail(ERR.overflow);
  ctx.ks.put(key, { type: "string", data: next.toString() }, true);
  return Number(next);
}

export const stringCommands: CommandSpec[] = [
  command("get", 2, (ctx, [, key]) => get(ctx, key as string)),
  command("set", -3, set, ["write"]),
  command("incr", 2, (ctx, [, key]) => incrBy(ctx, key as string, 1n), ["write"]),
  command("decr", 2, (ctx, [, key]) => incrBy(ctx, key as string, -1n), ["write"]),
  command("incrby", 3, (ctx, [, key, by]) => incrBy(ctx, key as string, parseInt64(by as string)), ["write"]),
  command("decrby", 3, (ctx, [, key, by]) => {
    const n = parseInt64(by as string);
    if (n === -(1n << 63n)) fail("ERR decrement would overflow");
    return incrBy(ctx, key as string, -n);
  }, ["write"]),
  command("append", 3, (ctx, [, key, value]) => {
    const existing = ctx.ks.get(key as string, "string");
    if (existing) {
      existing.data += value as string;
      return existing.data.length;
    }
    ctx.ks.put(key as string, { type: "string", data: value as string });
    return (value as string).length;
  }, ["write"]),
];
