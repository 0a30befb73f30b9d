/** Hash commands: HGET, HSET, HDEL, HMGET, HINCRBY, HEXISTS, HLEN, HGETALL, HKEYS. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { inInt64, parseInt64 } from "../parse.js";
import { ERR, fail } from "../reply.js";

const hash = (ctx: CommandContext, key: string): Map<string, string> | undefined => ctx.ks.get(key, "hash")?.data;

export const hashCommands: CommandSpec[] = [
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
  }, ["write"]),
  command("hdel", -3, (ctx, argv) => {
    const h = hash(ctx, argv[1] as string);
    if (!h) return 0;
    const removed = argv.slice(2).filter((f) => h.delete(f)).length;
    ctx.ks.dropIfEmpty(argv[1] as string);
    return removed;
  }, ["write"]),
  command("hmget", -3, (ctx, argv) => {
    const h = hash(ctx, argv[1] as string);
    return argv.slice(2).map((f) => h?.get(f) ?? null);
  }),
  command("hincrby", 4, (ctx, [, key, field, by]) => {
    const increment = parseInt64(by as string);
    const h = ctx.ks.getOrCreate(key as string, "hash", () => ({ type: "hash", data: new Map() })).data;
    const current = h.get(field as string);
    const value = current === undefined ? 0n : parseInt64(current, ERR.hashNotInteger);
    const next = value + increment;
    if (!inInt64(next)) fail(ERR.overflow);
    h.set(field as string, next.toString());
    return Number(next);
  }, ["write"]),
  command("hexists", 3, (ctx, [, key, field]) => (hash(ctx, key as string)?.has(field as string) ? 1 : 0)),
  command("hlen", 2, (ctx, [, key]) => hash(ctx, key as string)?.size ?? 0),
  command("hgetall", 2, (ctx, [, key]) => [...(hash(ctx, key as string) ?? new Map<string, string>())].flat()),
  command("hkeys", 2, (ctx, [, key]) => [...(hash(ctx, key as string)?.keys() ?? [])]),
];
