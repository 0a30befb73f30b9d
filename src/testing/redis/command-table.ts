/** Every command MemoryRedis knows, and the lookup that finds one and checks its arity. */
import type { CommandSpec } from "./command.js";
import { hashCommands } from "./commands/hashes.js";
import { keyCommands } from "./commands/keys.js";
import { listCommands } from "./commands/lists.js";
import { serverCommands } from "./commands/server.js";
import { setCommands } from "./commands/sets.js";
import { streamCommands } from "./commands/streams.js";
import { stringCommands } from "./commands/strings.js";
import { zsetCommands } from "./commands/zsets.js";
import { ErrorReply } from "./reply.js";

const COMMANDS: ReadonlyMap<string, CommandSpec> = new Map(
  [...stringCommands, ...keyCommands, ...hashCommands, ...listCommands, ...setCommands, ...zsetCommands, ...streamCommands, ...serverCommands]
    .map((spec) => [spec.name, spec]),
);

/** Commands only a subscriber connection (the adapter's createSubscriber) may send, and the transaction commands. */
export const NOSCRIPT_EXTRA = new Set(["multi", "exec", "discard", "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "psubscribe", "punsubscribe"]);

const arityOk = (arity: number, argc: number): boolean => (arity >= 0 ? argc === arity : argc >= -arity);

/** Finds a command (or subcommand) and checks its arity; an error reply, worded as Redis words it, when that fails. */
export function lookupCommand(argv: readonly string[], inScript: boolean): CommandSpec | ErrorReply {
  const name = (argv[0] ?? "").toLowerCase();
  const spec = COMMANDS.get(name);
  if (!spec) {
    if (inScript) return new ErrorReply("ERR Unknown Redis command called from script");
    let args = "";
    for (const a of argv.slice(1)) {
      if (args.length >= 128) break;
      args += `'${a.slice(0, 128 - args.length)}' `;
    }
    return new ErrorReply(`ERR unknown command '${(argv[0] ?? "").slice(0, 128)}', with args beginning with: ${args}`.replace(/[\r\n]/g, " "));
  }
  const arityError = (n: string): ErrorReply =>
    new ErrorReply(inScript ? "ERR Wrong number of args calling Redis command from script" : `ERR wrong number of arguments for '${n}' command`);
  if (!arityOk(spec.arity, argv.length)) return arityError(spec.name);
  if (!spec.subcommands) return spec;
  const subName = `${name}|${(argv[1] ?? "").toLowerCase()}`;
  const sub = spec.subcommands.find((s) => s.name === subName);
  if (!sub) {
    if (inScript) return new ErrorReply("ERR Unknown Redis command called from script");
    return new ErrorReply(`ERR unknown subcommand '${(argv[1] ?? "").slice(0, 128)}'. Try ${name.toUpperCase()} HELP.`);
  }
  if (!arityOk(sub.arity, argv.length)) return arityError(sub.name);
  return sub;
}
