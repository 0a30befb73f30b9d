/** Connection and server commands, scripting and publishing; and the table of every command MemoryRedis has. */
import { command, type CommandContext, type CommandSpec } from "./command.js";
import { globMatch } from "./glob.js";
import { parseInteger } from "./parse.js";
import { dataCommands } from "./data-commands.js";
import { ErrorReply, fail, OK, StatusReply, unsupportedMessage, type Reply } from "./reply.js";

/** The text of INFO: the sections and fields surelock and its doctor read, filled with what MemoryRedis knows of itself. */
export function infoText(sections: readonly string[], facts: Record<string, string | number>, config: ReadonlyMap<string, string>): string {
  const all = sections.length === 0 || sections.some((s) => ["all", "default", "everything"].includes(s));
  const parts: Record<string, Record<string, string | number>> = {
    Server: { redis_version: facts.version ?? "", redis_mode: "standalone", os: "MemoryRedis (in-process)", process_id: process.pid,
      run_id: facts.runId ?? "", tcp_port: 0, server_time_usec: facts.timeUs ?? 0, uptime_in_seconds: facts.uptimeS ?? 0 },
    Memory: { maxmemory: config.get("maxmemory") ?? "0", maxmemory_policy: config.get("maxmemory-policy") ?? "noeviction" },
    Persistence: { loading: 0, aof_enabled: config.get("appendonly") === "yes" ? 1 : 0 },
    Replication: { role: "master", connected_slaves: facts.replicas ?? 0 },
    Keyspace: facts.keys ? { db0: `keys=${facts.keys},expires=0,avg_ttl=0` } : {},
  };
  return Object.entries(parts)
    .filter(([title]) => all || sections.includes(title.toLowerCase()))
    .map(([title, fields]) => `# ${title}\r\n${Object.entries(fields).map(([k, v]) => `${k}:${v}\r\n`).join("")}`)
    .join("\r\n");
}

function evalCommand(bySha: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const body = argv[1] as string;
    const numKeys = parseInteger(argv[2] as string);
    if (numKeys < 0) fail("ERR Number of keys can't be negative");
    if (numKeys > argv.length - 3) fail("ERR Number of keys can't be greater than number of args");
    const [keys, args] = [argv.slice(3, 3 + numKeys), argv.slice(3 + numKeys)];
    return bySha ? ctx.server.evalScript(ctx, undefined, body.toLowerCase(), keys, args) : ctx.server.evalScript(ctx, body, "", keys, args);
  };
}

const serverCommands: CommandSpec[] = [
  command("ping", -1, (_ctx, argv) => {
    if (argv.length > 2) fail("ERR wrong number of arguments for 'ping' command");
    return argv[1] === undefined ? new StatusReply("PONG") : argv[1];
  }),
  command("echo", 2, (_ctx, [, message]) => message as string),
  command("time", 1, (ctx) => {
    const us = ctx.server.timeUs();
    return [String(Math.floor(us / 1_000_000)), String(us % 1_000_000)];
  }),
  command("info", -1, (ctx, argv) => ctx.server.info(argv.slice(1).map((s) => s.toLowerCase()))),
  command("wait", 3, (ctx, [, replicas, timeout]) => {
    parseInteger(replicas as string);
    if (parseInteger(timeout as string, "ERR timeout is not an integer or out of range") < 0) fail("ERR timeout is negative");
    return ctx.server.replicas;
  }, true),
  command("eval", -3, evalCommand(false), true),
  command("evalsha", -3, evalCommand(true), true),
  command("publish", 3, (ctx, [, channel, message]) => ctx.server.publish(channel as string, message as string, false)),
  command("spublish", 3, (ctx, [, channel, message]) => ctx.server.publish(channel as string, message as string, true)),
  {
    name: "script",
    arity: -2,
    noscript: true,
    subcommands: [
      command("script|load", 3, (ctx, [, , source]) => ctx.server.loadScript(source as string), true),
      command("script|exists", -3, (ctx, argv) => argv.slice(2).map((sha) => (ctx.server.scriptExists(sha.toLowerCase()) ? 1 : 0)), true),
      command("script|flush", -2, (ctx, argv) => {
        if (argv.length > 3 || (argv[2] !== undefined && !/^A?SYNC$/i.test(argv[2]))) fail("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        ctx.server.flushScripts();
        return OK;
      }, true),
    ],
  },
  {
    name: "config",
    arity: -2,
    subcommands: [
      command("config|get", -3, (ctx, argv) => {
        const out: string[] = [];
        for (const [name, value] of ctx.server.config) {
          if (argv.slice(2).some((p) => globMatch(p, name, true))) out.push(name, value);
        }
        return out;
      }),
    ],
  },
];

const unsupportedReply = (what: string): ErrorReply => new ErrorReply(unsupportedMessage(what));

const COMMANDS: ReadonlyMap<string, CommandSpec> = new Map(
  [...dataCommands, ...serverCommands]
    .map((spec) => [spec.name, spec]),
);

const arityOk = (arity: number, argc: number): boolean => (arity >= 0 ? argc === arity : argc >= -arity);

/** Finds a command (or subcommand) and checks its arity; an error reply, worded as Redis words it, when that fails. */
export function lookupCommand(argv: readonly string[], inScript: boolean): CommandSpec | ErrorReply {
  const name = (argv[0] ?? "").toLowerCase();
  const spec = COMMANDS.get(name);
  // Redis has far more commands than the double: each one it lacks says so, whether Redis has it or not.
  if (!spec) return unsupportedReply(`'${(argv[0] ?? "").slice(0, 128).replace(/[\r\n]/g, " ")}'`);
  const arityError = (n: string): ErrorReply =>
    new ErrorReply(inScript ? "ERR Wrong number of args calling Redis command from script" : `ERR wrong number of arguments for '${n}' command`);
  if (!arityOk(spec.arity, argv.length)) return arityError(spec.name);
  if (!spec.subcommands) return spec;
  const subName = `${name}|${(argv[1] ?? "").toLowerCase()}`;
  const sub = spec.subcommands.find((s) => s.name === subName);
  if (!sub) return unsupportedReply(`'${name.toUpperCase()} ${(argv[1] ?? "").slice(0, 128).replace(/[\r\n]/g, " ")}'`);
  if (!arityOk(sub.arity, argv.length)) return arityError(sub.name);
  return sub;
}
