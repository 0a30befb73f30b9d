/** Connection and server commands, scripting and publishing. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import { globMatch } from "../glob.js";
import { parseInteger } from "../parse.js";
import { fail, OK, StatusReply, type Reply } from "../reply.js";

function evalCommand(bySha: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const body = argv[1] as string;
    const numKeys = parseInteger(argv[2] as string);
    if (numKeys < 0) fail("ERR Number of keys can't be negative");
    if (numKeys > argv.length - 3) fail("ERR Number of keys can't be greater than number of args");
    const keys = argv.slice(3, 3 + numKeys);
    const args = argv.slice(3 + numKeys);
    return bySha
      ? ctx.server.evalScript(ctx, undefined, body.toLowerCase(), keys, args)
      : ctx.server.evalScript(ctx, body, "", keys, args);
  };
}

/** Client names may not contain spaces or special characters (Redis allows '!' to '~'). */
const validName = (name: string): boolean => /^[!-~]*$/.test(name);

export const serverCommands: CommandSpec[] = [
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
  }, ["noscript"]),
  command("eval", -3, evalCommand(false), ["noscript"]),
  command("evalsha", -3, evalCommand(true), ["noscript"]),
  command("publish", 3, (ctx, [, channel, message]) => ctx.server.publish(channel as string, message as string, false)),
  command("spublish", 3, (ctx, [, channel, message]) => ctx.server.publish(channel as string, message as string, true)),
  {
    name: "script",
    arity: -2,
    flags: ["noscript"],
    subcommands: [
      command("script|load", 3, (ctx, [, , source]) => ctx.server.loadScript(source as string), ["noscript"]),
      command("script|exists", -3, (ctx, argv) => argv.slice(2).map((sha) => (ctx.server.scriptExists(sha.toLowerCase()) ? 1 : 0)), ["noscript"]),
      command("script|flush", -2, (ctx, argv) => {
        if (argv.length > 3 || (argv[2] !== undefined && !["ASYNC", "SYNC"].includes(argv[2].toUpperCase()))) {
          fail("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        }
        ctx.server.flushScripts();
        return OK;
      }, ["noscript"]),
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
  {
    name: "client",
    arity: -2,
    flags: ["noscript"],
    subcommands: [
      command("client|id", 2, (ctx) => ctx.conn.id, ["noscript"]),
      command("client|getname", 2, (ctx) => ctx.conn.name ?? null, ["noscript"]),
      command("client|setname", 3, (ctx, [, , name]) => {
        if (!validName(name as string)) fail("ERR Client names cannot contain spaces, newlines or special characters.");
        ctx.conn.name = name === "" ? undefined : name;
        return OK;
      }, ["noscript"]),
    ],
  },
];

