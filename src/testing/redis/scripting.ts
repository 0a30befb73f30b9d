/**
 * Redis's Lua scripting on the interpreter of ../lua: the script cache, the `redis` and `cjson`
 * libraries, read-only globals, and the conversions between RESP replies and Lua values exactly
 * as Redis documents them. A script runs to completion inside one synchronous call, so nothing
 * interleaves with it.
 */
import { createHash } from "node:crypto";
import {
  cjsonLibrary, createInterpreter, library, LuaError, native, LuaFunction, LuaTable, READONLY, ScriptKilledError, tostring,
  type Interpreter, type LuaValue,
} from "../lua/index.js";
import type { CommandContext } from "./command.js";
import { formatDouble } from "./parse.js";
import { CommandError, ErrorReply, StatusReply, type Reply } from "./reply.js";

export const sha1hex = (source: string): string => createHash("sha1").update(Buffer.from(source, "latin1")).digest("hex");

/** Runs one command for a script; the server applies the script rules (no EVAL, no SUBSCRIBE, ...). */
export type ScriptDispatch = (ctx: CommandContext, argv: string[]) => Reply;

/** A RESP reply as Lua sees it (what redis.call returns). */
export function replyToLua(reply: Reply): LuaValue {
  if (typeof reply === "string" || typeof reply === "number") return reply;
  if (reply === null) return false;
  if (reply instanceof StatusReply) return fieldTable("ok", reply.status);
  if (reply instanceof ErrorReply) return fieldTable("err", reply.message);
  return LuaTable.of(reply.map(replyToLua));
}

function fieldTable(field: string, value: string): LuaTable {
  const t = new LuaTable();
  t.set(field, value);
  return t;
}

const INT64_MIN = -9223372036854775808;

/** A Lua value as a RESP reply (what a script returns). */
export function luaToReply(value: LuaValue): Reply {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? 1 : null;
  if (typeof value === "number") {
    // C's (long long) cast: truncation; out of range (or NaN) comes out as the smallest long long on x86-64.
    return Number.isFinite(value) && Math.abs(value) < 2 ** 63 ? Math.trunc(value) || 0 : INT64_MIN;
  }
  if (value instanceof LuaTable) {
    const err = value.get("err");
    if (typeof err === "string") return new ErrorReply(oneLine(err));
    const ok = value.get("ok");
    if (typeof ok === "string") return new StatusReply(oneLine(ok));
    const out: Reply[] = [];
    for (let i = 1; value.get(i) !== undefined; i++) out.push(luaToReply(value.get(i)));
    return out;
  }
  return null;
}

/** Redis never lets a newline into an error or status line. */
const oneLine = (s: string): string => s.replace(/[\r\n]/g, " ");

/** The error table luaPushErrorBuff builds: "-CODE msg" keeps its code, a bare message gets ERR. */
function errorTable(text: string): LuaTable {
  let code = "ERR";
  let message = text;
  if (text.startsWith("-")) {
    const space = text.indexOf(" ");
    if (space < 0) message = text.slice(1);
    else {
      code = text.slice(1, space);
      message = text.slice(space + 1);
    }
  }
  return fieldTable("err", `${code} ${message.replace(/^[\r\n]+|[\r\n]+$/g, "")}`);
}

interface Running {
  readonly ctx: CommandContext;
}

export interface ScriptEngineOptions {
  readonly dispatch: ScriptDispatch;
  readonly version: string;
  readonly shortestDoubles: boolean;
}

export class ScriptEngine {
  readonly #lua: Interpreter;
  readonly #cache = new Map<string, LuaFunction>();
  readonly #dispatch: ScriptDispatch;
  readonly #shortestDoubles: boolean;
  #running: Running | undefined;

  constructor(options: ScriptEngineOptions) {
    this.#dispatch = options.dispatch;
    this.#shortestDoubles = options.shortestDoubles;
    const lua = createInterpreter({ chunkName: "user_script" });
    this.#lua = lua;
    const g = lua.globals;
    g.set("cjson", cjsonLibrary());
    // Redis 7's pcall hands over an error table that has an `err` string as that string.
    g.set("pcall", native("pcall", (a, rt) => {
      a.any(0);
      try {
        return [true, ...rt.call(a.values[0], a.values.slice(1))];
      } catch (error) {
        if (error instanceof ScriptKilledError || !(error instanceof LuaError)) throw error;
        const v = error.value;
        const err = v instanceof LuaTable ? v.get("err") : undefined;
        return [false, typeof err === "string" ? err : v];
      }
    }));
    g.set("redis", this.#redisLibrary(options.version));
    for (const name of ["string", "table", "math", "cjson", "redis"]) READONLY.add(g.get(name) as LuaTable);
    // Redis 7: globals are read-only, and reading an undefined one is an error, not nil.
    const meta = new LuaTable();
    meta.set("__index", new LuaFunction("__index", (args, rt) => {
      throw new LuaError(`${rt.where(1)} Script attempted to access nonexistent global variable '${tostring(args[1])}'`);
    }));
    g.metatable = meta;
    READONLY.add(g);
  }

  /** SCRIPT LOAD: compiles and caches; the SHA1 of the body. */
  load(source: string): string {
    const sha = sha1hex(source);
    if (this.#cache.has(sha)) return sha;
    try {
      this.#cache.set(sha, this.#lua.load(source));
    } catch (error) {
      if (error instanceof LuaError) throw new CommandError(oneLine(`ERR Error compiling script (new function): ${tostring(error.value)}`));
      throw error;
    }
    return sha;
  }

  exists(sha: string): boolean {
    return this.#cache.has(sha);
  }

  flush(): void {
    this.#cache.clear();
  }

  /** EVAL (source given) or EVALSHA (sha only). */
  eval(ctx: CommandContext, source: string | undefined, sha: string, keys: readonly string[], args: readonly string[]): Reply {
    const id = source === undefined ? sha : this.load(source);
    const fn = this.#cache.get(id);
    if (!fn) throw new CommandError("NOSCRIPT No matching script. Please use EVAL.");
    const g = this.#lua.globals;
    g.set("KEYS", LuaTable.of(keys));
    g.set("ARGV", LuaTable.of(args));
    this.#running = { ctx };
    try {
      return luaToReply(this.#lua.run(fn)[0]);
    } catch (error) {
      if (error instanceof ScriptKilledError) return new ErrorReply(`ERR ${error.message}`);
      if (!(error instanceof LuaError)) throw error;
      return this.#errorReply(error, id);
    } finally {
      this.#running = undefined;
    }
  }

  /** An error that left the script, as Redis's error handler and luaCallFunction report it. */
  #errorReply(error: LuaError, sha: string): ErrorReply {
    const v = error.value;
    let message: string;
    if (v instanceof LuaTable) {
      const err = v.get("err");
      message = typeof err === "string" ? err : "ERR unknown error";
    } else {
      message = `ERR ${tostring(v)}`;
    }
    const where = error.line === undefined ? "" : ` script: ${sha}, on @user_script:${error.line}.`;
    return new ErrorReply(oneLine(message.replace(/^-/, "") + where));
  }

  /** Arguments of redis.call as command arguments: strings, and numbers printed as Redis prints them. */
  #argv(values: LuaValue[]): string[] | LuaTable {
    if (values.length === 0) return errorTable("Please specify at least one argument for this redis lib call");
    const argv: string[] = [];
    for (const v of values) {
      if (typeof v === "string") argv.push(v);
      else if (typeof v === "number") argv.push(formatDouble(v, this.#shortestDoubles));
      else return errorTable("Lua redis lib command arguments must be strings or integers");
    }
    return argv;
  }

  #call(values: LuaValue[], raise: boolean): LuaValue[] {
    const running = this.#running;
    if (!running) throw new LuaError("redis.call/pcall can only be called inside a script invocation");
    const argv = this.#argv(values);
    if (argv instanceof LuaTable) {
      if (raise) throw new LuaError(argv);
      return [argv];
    }
    const reply = this.#dispatch(running.ctx, argv);
    if (!(reply instanceof ErrorReply)) return [replyToLua(reply)];
    const error = errorTable(`-${reply.message}`);
    // Redis marks errors that came from a command, which the script can see.
    error.set("ignore_error_stats_update", true);
    if (raise) throw new LuaError(error);
    return [error];
  }

  #redisLibrary(version: string): LuaTable {
    const lib = library({
      call: (a) => this.#call(a.values, true),
      pcall: (a) => this.#call(a.values, false),
      error_reply: (a) => {
        const msg = a.values[0];
        if (a.count !== 1 || typeof msg !== "string") return [errorTable("wrong number or type of arguments")];
        return [errorTable(msg.startsWith("-") ? msg : `-${msg}`)];
      },
      status_reply: (a) => {
        const msg = a.values[0];
        if (a.count !== 1 || typeof msg !== "string") return [errorTable("wrong number or type of arguments")];
        return [fieldTable("ok", msg)];
      },
      sha1hex: (a) => {
        if (a.count !== 1) throw new LuaError(errorTable("wrong number of arguments"));
        return [sha1hex(a.string(0))];
      },
      log: () => [],
      setresp: (a) => {
        if (a.values[0] !== 2) throw a.error("MemoryRedis scripts speak RESP2 only");
        return [];
      },
      replicate_commands: () => [true],
      set_repl: () => [],
      breakpoint: () => [false],
      debug: () => [],
    });
    const [major = 0, minor = 0, patch = 0] = version.split(".").map(Number);
    const constants: Record<string, LuaValue> = {
      LOG_DEBUG: 0, LOG_VERBOSE: 1, LOG_NOTICE: 2, LOG_WARNING: 3,
      REPL_NONE: 0, REPL_AOF: 1, REPL_SLAVE: 2, REPL_REPLICA: 2, REPL_ALL: 3,
      REDIS_VERSION: version, REDIS_VERSION_NUM: (major << 16) | (minor << 8) | patch,
    };
    for (const [k, v] of Object.entries(constants)) lib.set(k, v);
    return lib;
  }
}
