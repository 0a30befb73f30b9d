/** Keyspace commands: DEL, EXISTS, TYPE, the EXPIRE family, TTL/PTTL, PERSIST, KEYS, SCAN, DBSIZE, FLUSHALL. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { globMatch } from "../glob.js";
import { inInt64, parseInt64 } from "../parse.js";
import { ERR, fail, OK, StatusReply, type Reply } from "../reply.js";

function parseExpireFlags(argv: readonly string[]): "NX" | "XX" | "GT" | "LT" | undefined {
  let nx = false, xx = false, gt = false, lt = false;
  for (const arg of argv.slice(3)) {
    const opt = arg.toUpperCase();
    if (opt === "NX") nx = true;
    else if (opt === "XX") xx = true;
    else if (opt === "GT") gt = true;
    else if (opt === "LT") lt = true;
    else fail(`ERR Unsupported option ${arg}`);
  }
  if (nx && (xx || gt || lt)) fail("ERR NX and XX, GT or LT options at the same time are not compatible");
  if (gt && lt) fail("ERR GT and LT options at the same time are not compatible");
  return nx ? "NX" : xx ? "XX" : gt ? "GT" : lt ? "LT" : undefined;
}

/** EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT. */
function expire(seconds: boolean, absolute: boolean, name: string) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const key = argv[1] as string;
    const flag = parseExpireFlags(argv);
    let when = parseInt64(argv[2] as string);
    const invalid = `ERR invalid expire time in '${name}' command`;
    if (seconds) {
      if (when > (1n << 63n) / 1000n || when < -(1n << 63n) / 1000n) fail(invalid);
      when *= 1000n;
    }
    if (!absolute) {
      when += BigInt(ctx.now());
      if (!inInt64(when)) fail(invalid);
    }
    const entry = ctx.ks.entry(key);
    if (!entry) return 0;
    const current = entry.expiresAt;
    const at = Number(when);
    if (flag === "NX" && current !== undefined) return 0;
    if (flag === "XX" && current === undefined) return 0;
    if (flag === "GT" && (current === undefined || at <= current)) return 0;
    if (flag === "LT" && current !== undefined && at >= current) return 0;
    if (at <= ctx.now()) ctx.ks.delete(key);
    else entry.expiresAt = at;
    return 1;
  };
}

function ttl(ctx: CommandContext, key: string, ms: boolean): Reply {
  const entry = ctx.ks.entry(key);
  if (!entry) return -2;
  if (entry.expiresAt === undefined) return -1;
  const left = Math.max(0, entry.expiresAt - ctx.now());
  return ms ? left : Math.floor((left + 500) / 1000);
}

function expireTime(ctx: CommandContext, key: string, ms: boolean): Reply {
  const entry = ctx.ks.entry(key);
  if (!entry) return -2;
  if (entry.expiresAt === undefined) return -1;
  return ms ? entry.expiresAt : Math.floor((entry.expiresAt + 500) / 1000);
}

/** SCAN's cursor is the creation number of the last key returned, so deletions never make it skip a key. */
function scan(ctx: CommandContext, argv: readonly string[]): Reply {
  const cursorText = argv[1] as string;
  if (!/^[0-9]+$/.test(cursorText)) fail("ERR invalid cursor");
  const cursor = Number(cursorText);
  let pattern: string | undefined;
  let count = 10;
  let type: string | undefined;
  for (let i = 2; i < argv.length; i += 2) {
    const opt = (argv[i] as string).toUpperCase();
    const value = argv[i + 1];
    if (value === undefined) fail(ERR.syntax);
    if (opt === "MATCH") pattern = value;
    else if (opt === "COUNT") {
      count = Number(parseInt64(value as string));
      if (count < 1) fail(ERR.syntax);
    } else if (opt === "TYPE") type = (value as string).toLowerCase();
    else fail(ERR.syntax);
  }
  const keys: string[] = [];
  let next = 0;
  let examined = 0;
  const live = [...ctx.ks.live()].filter(([, e]) => e.seq > cursor).sort((a, b) => a[1].seq - b[1].seq);
  for (const [key, e] of live) {
    if (examined === count) { next = e.seq - 1; break; }
    examined++;
    if (pattern !== undefined && !globMatch(pattern, key)) continue;
    if (type !== undefined && e.value.type !== type) continue;
    keys.push(key);
  }
  return [String(next), keys];
}

export const keyCommands: CommandSpec[] = [
  command("del", -2, (ctx, argv) => argv.slice(1).filter((k) => ctx.ks.delete(k)).length, ["write"]),
  command("exists", -2, (ctx, argv) => argv.slice(1).filter((k) => ctx.ks.entry(k) !== undefined).length),
  command("type", 2, (ctx, [, key]) => new StatusReply(ctx.ks.entry(key as string)?.value.type ?? "none")),
  command("expire", -3, expire(true, false, "expire"), ["write"]),
  command("pexpire", -3, expire(false, false, "pexpire"), ["write"]),
  command("expireat", -3, expire(true, true, "expireat"), ["write"]),
  command("pexpireat", -3, expire(false, true, "pexpireat"), ["write"]),
  command("ttl", 2, (ctx, [, key]) => ttl(ctx, key as string, false)),
  command("pttl", 2, (ctx, [, key]) => ttl(ctx, key as string, true)),
  command("expiretime", 2, (ctx, [, key]) => expireTime(ctx, key as string, false)),
  command("pexpiretime", 2, (ctx, [, key]) => expireTime(ctx, key as string, true)),
  command("persist", 2, (ctx, [, key]) => {
    const entry = ctx.ks.entry(key as string);
    if (!entry || entry.expiresAt === undefined) return 0;
    entry.expiresAt = undefined;
    return 1;
  }, ["write"]),
  command("keys", 2, (ctx, [, pattern]) => [...ctx.ks.live()].map(([k]) => k).filter((k) => globMatch(pattern as string, k))),
  command("scan", -2, scan),
  command("dbsize", 1, (ctx) => ctx.ks.size),
  command("flushall", -1, (ctx, argv) => {
    if (argv.length > 2 || (argv[1] !== undefined && !["ASYNC", "SYNC"].includes(argv[1].toUpperCase()))) fail(ERR.syntax);
    ctx.ks.clear();
    return OK;
  }, ["write"]),
];
