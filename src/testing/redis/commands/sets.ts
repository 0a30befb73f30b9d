/** Set commands: SADD, SREM, SMEMBERS, SCARD. */
import { command, type CommandContext, type CommandSpec } from "../command.js";

const set = (ctx: CommandContext, key: string): Set<string> | undefined => ctx.ks.get(key, "set")?.data;

export const setCommands: CommandSpec[] = [
  command("sadd", -3, (ctx, argv) => {
    const s = ctx.ks.getOrCreate(argv[1] as string, "set", () => ({ type: "set", data: new Set() })).data;
    let added = 0;
    for (const member of argv.slice(2)) {
      if (!s.has(member)) { s.add(member); added++; }
    }
    return added;
  }, ["write"]),
  command("srem", -3, (ctx, argv) => {
    const s = set(ctx, argv[1] as string);
    if (!s) return 0;
    const removed = argv.slice(2).filter((m) => s.delete(m)).length;
    ctx.ks.dropIfEmpty(argv[1] as string);
    return removed;
  }, ["write"]),
  command("smembers", 2, (ctx, [, key]) => [...(set(ctx, key as string) ?? [])]),
  command("scard", 2, (ctx, [, key]) => set(ctx, key as string)?.size ?? 0),
];
