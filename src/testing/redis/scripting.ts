/**
 * Redis's Lua scripting on wasmoon: the script cache, one Lua state per server with Redis's
 * libraries (./redis-lua.ts), and the conversions between RESP replies and Lua values as Redis
 * documents them. A script runs to completion inside one synchronous call, so nothing
 * interleaves with it.
 */
import { createHash } from "node:crypto";
import type { CommandContext } from "./command.js";
import { formatDouble } from "./parse.js";
import { luaRuntime, type Lua } from "./lua-runtime.js";
import { REDIS_LUA } from "./redis-lua.js";
import { CommandError, ErrorReply, StatusReply, type Reply } from "./reply.js";

export const sha1hex = (source: string): string => createHash("sha1").update(Buffer.from(source, "latin1")).digest("hex");

/** The server a script engine serves: `dispatch` runs one command for a script, under the script rules. */
export interface ScriptEngineOptions {
  readonly dispatch: (ctx: CommandContext, argv: string[]) => Reply;
  readonly version: string;
  readonly shortestDoubles: boolean;
}

const REGISTRY = -1_000_000 - 1000;
const T = { nil: 0, boolean: 1, number: 3, string: 4, table: 5 } as const;
/** Lua instructions between two looks at a running script, and how many looks before it is stopped. */
const HOOK_EVERY = 1_000_000;
let hookBudget = 2_000;
/** @internal For tests: how many million instructions a script may run. */
export const setScriptBudget = (millions: number): void => { hookBudget = millions; };

/** One Lua state at a time runs: the C functions below find their engine here. */
let running: { engine: ScriptEngine; ctx: CommandContext; looks: number } | undefined;
let shared: { lua: Lua; call: number; pcall: number; sha1: number; decode: number; hook: number } | undefined;
const states = new FinalizationRegistry<number>((L) => shared?.lua.c._lua_close(L));

/** The C functions every state shares, made once per process. */
function runtime(): NonNullable<typeof shared> {
  if (shared) return shared;
  const lua = luaRuntime();
  const c = lua.c;
  const cFunction = (fn: (L: number) => number): number => c.addFunction((L: number) => {
    try {
      return fn(L);
    } catch (error) {
      if (error === Infinity || typeof error === "number") throw error; // Lua's own longjmp
      lua.push(L, error instanceof Error ? error.message : String(error));
    }
    return c._lua_error(L);
  }, "ii");
  shared = {
    lua,
    call: cFunction((L) => (running ? running.engine.dispatch(L, running.ctx, true) : 0)),
    pcall: cFunction((L) => (running ? running.engine.dispatch(L, running.ctx, false) : 0)),
    sha1: cFunction((L) => { lua.push(L, sha1hex(lua.read(L, 1))); return 1; }),
    decode: cFunction((L) => {
      let value: unknown;
      try {
        value = JSON.parse(Buffer.from(lua.read(L, 1), "latin1").toString("utf8"));
      } catch (error) {
        throw new Error(`Expected value but found invalid token: ${(error as Error).message}`);
      }
      pushJson(lua, L, value);
      return 1;
    }),
    hook: c.addFunction((L: number) => {
      if (running && ++running.looks > hookBudget) {
        c._lua_rawgeti(L, REGISTRY, BigInt(running.engine.killedRef));
        c._lua_error(L);
      }
    }, "vii"),
  };
  return shared;
}

export class ScriptEngine {
  readonly #options: ScriptEngineOptions;
  /** SHA1 → the compiled function's registry reference. */
  readonly #cache = new Map<string, number>();
  #L = 0;
  #run = 0;
  #handler = 0;
  killedRef = 0;

  constructor(options: ScriptEngineOptions) {
    this.#options = options;
  }

  /** This server's Lua state, made on first use. */
  #state(): number {
    if (this.#L) return this.#L;
    const { lua, call, pcall, sha1, decode, hook } = runtime();
    const c = lua.c;
    const L = c._luaL_newstate();
    states.register(this, L);
    c._luaL_openlibs(L);
    this.#load(L, REDIS_LUA, "=surelock");
    c._lua_pushcclosure(L, call, 0);
    c._lua_pushcclosure(L, pcall, 0);
    c._lua_pushcclosure(L, sha1, 0);
    c._lua_pushcclosure(L, decode, 0);
    c._lua_pushlightuserdata(L, 0);
    const version = this.#options.version;
    const [major = 0, minor = 0, patch = 0] = version.split(".").map(Number);
    lua.push(L, version);
    c._lua_pushinteger(L, BigInt((major << 16) | (minor << 8) | patch));
    if (c._lua_pcallk(L, 7, 3, 0, 0, 0) !== 0) throw new Error(`MemoryRedis: Redis's Lua libraries failed to load: ${lua.read(L, -1)}`);
    this.killedRef = c._luaL_ref(L, REGISTRY);
    this.#handler = c._luaL_ref(L, REGISTRY);
    this.#run = c._luaL_ref(L, REGISTRY);
    c._lua_sethook(L, hook, 8, HOOK_EVERY);
    this.#L = L;
    return L;
  }

  /** Compiles `source` onto the stack; a compile error becomes the ERR Redis answers. */
  #load(L: number, source: string, name: string): void {
    const { lua } = runtime();
    if (lua.c._luaL_loadbufferx(L, lua.write(source), source.length, lua.name(name), lua.name("t")) === 0) return;
    const message = lua.read(L, -1);
    lua.c._lua_settop(L, 0);
    throw new CommandError(oneLine(`ERR Error compiling script (new function): ${message}`));
  }

  /** SCRIPT LOAD: compiles and caches; the SHA1 of the body. */
  load(source: string): string {
    const sha = sha1hex(source);
    if (this.#cache.has(sha)) return sha;
    const L = this.#state();
    this.#load(L, source, "@user_script");
    this.#cache.set(sha, runtime().lua.c._luaL_ref(L, REGISTRY));
    return sha;
  }

  exists(sha: string): boolean {
    return this.#cache.has(sha);
  }

  flush(): void {
    for (const ref of this.#cache.values()) runtime().lua.c._luaL_unref(this.#L, REGISTRY, ref);
    this.#cache.clear();
  }

  /** EVAL (source given) or EVALSHA (sha only). */
  eval(ctx: CommandContext, source: string | undefined, sha: string, keys: readonly string[], args: readonly string[]): Reply {
    const id = source === undefined ? sha : this.load(source);
    const ref = this.#cache.get(id);
    if (ref === undefined) throw new CommandError("NOSCRIPT No matching script. Please use EVAL.");
    const L = this.#state();
    const c = runtime().lua.c;
    for (const r of [this.#handler, this.#run, ref]) c._lua_rawgeti(L, REGISTRY, BigInt(r));
    this.#pushReply(L, keys);
    this.#pushReply(L, args);
    running = { engine: this, ctx, looks: 0 };
    try {
      return c._lua_pcallk(L, 3, 1, 1, 0, 0) === 0 ? this.#toReply(L, -1) : this.#errorReply(L, id);
    } finally {
      running = undefined;
      c._lua_settop(L, 0);
    }
  }

  /** The error table the handler made, as Redis reports it: the message, then where the script raised it. */
  #errorReply(L: number, sha: string): ErrorReply {
    const { lua } = runtime();
    const c = lua.c;
    let message = "ERR unknown error";
    if (c._lua_type(L, -1) === T.table) {
      if (c._lua_getfield(L, -1, lua.name("err")) === T.string) message = lua.read(L, -1);
      const line = c._lua_getfield(L, -2, lua.name("line")) === T.number ? c._lua_tonumberx(L, -1, 0) : undefined;
      if (line !== undefined) message += ` script: ${sha}, on @user_script:${line}.`;
    } else if (c._lua_type(L, -1) === T.string) {
      message = `ERR ${lua.read(L, -1)}`;
    }
    return new ErrorReply(oneLine(message.replace(/^-/, "")));
  }

  /** redis.call (`raise`) and redis.pcall: the reply, or an error table `{err = ...}` raised or returned. */
  dispatch(L: number, ctx: CommandContext, raise: boolean): number {
    const { lua } = runtime();
    const c = lua.c;
    const count = c._lua_gettop(L);
    const fail = (message: string, fromCommand: boolean): number => {
      c._lua_createtable(L, 0, 2);
      lua.push(L, message);
      c._lua_setfield(L, -2, lua.name("err"));
      // Redis marks the errors that came from a command, and a script can see the mark.
      if (fromCommand) {
        c._lua_pushboolean(L, 1);
        c._lua_setfield(L, -2, lua.name("ignore_error_stats_update"));
      }
      return raise ? c._lua_error(L) : 1;
    };
    if (count === 0) return fail("ERR Please specify at least one argument for this redis lib call", false);
    const argv: string[] = [];
    for (let i = 1; i <= count; i++) {
      const type = c._lua_type(L, i);
      if (type === T.string) argv.push(lua.read(L, i));
      else if (type !== T.number) return fail("ERR Lua redis lib command arguments must be strings or integers", false);
      else if (c._lua_isinteger(L, i)) argv.push(String(c._lua_tointegerx(L, i, 0)));
      else argv.push(formatDouble(c._lua_tonumberx(L, i, 0), this.#options.shortestDoubles));
    }
    const reply = this.#options.dispatch(ctx, argv);
    if (reply instanceof ErrorReply) return fail(reply.message, true);
    this.#pushReply(L, reply);
    return 1;
  }

  /** A RESP reply as Lua sees it (what redis.call returns). */
  #pushReply(L: number, reply: Reply): void {
    const { lua } = runtime();
    const c = lua.c;
    if (typeof reply === "string") lua.push(L, reply);
    else if (typeof reply === "number") pushNumber(lua, L, reply);
    else if (reply === null) c._lua_pushboolean(L, 0);
    else if (reply instanceof StatusReply || reply instanceof ErrorReply) {
      c._lua_createtable(L, 0, 1);
      lua.push(L, reply instanceof StatusReply ? reply.status : reply.message);
      c._lua_setfield(L, -2, lua.name(reply instanceof StatusReply ? "ok" : "err"));
    } else {
      c._lua_createtable(L, reply.length, 0);
      reply.forEach((item, i) => {
        this.#pushReply(L, item);
        c._lua_rawseti(L, -2, BigInt(i + 1));
      });
    }
  }

  /** A Lua value as a RESP reply (what a script returns). */
  #toReply(L: number, index: number): Reply {
    const { lua } = runtime();
    const c = lua.c;
    switch (c._lua_type(L, index)) {
      case T.string:
        return lua.read(L, index);
      case T.boolean:
        return c._lua_toboolean(L, index) ? 1 : null;
      case T.number: {
        if (c._lua_isinteger(L, index)) return Number(c._lua_tointegerx(L, index, 0));
        // C's (long long) cast: truncation; out of range (or NaN) is the smallest long long on x86-64.
        const n = c._lua_tonumberx(L, index, 0);
        return Number.isFinite(n) && Math.abs(n) < 2 ** 63 ? Math.trunc(n) || 0 : -9223372036854775808;
      }
      case T.table: {
        for (const [field, Kind] of [["err", ErrorReply], ["ok", StatusReply]] as const) {
          const isString = c._lua_getfield(L, index, lua.name(field)) === T.string;
          const text = isString ? lua.read(L, -1) : "";
          c._lua_settop(L, -2);
          if (isString) return new Kind(oneLine(text));
        }
        const out: Reply[] = [];
        const at = c._lua_absindex(L, index);
        for (let i = 1; c._lua_rawgeti(L, at, BigInt(i)) !== T.nil; i++) {
          out.push(this.#toReply(L, -1));
          c._lua_settop(L, -2);
        }
        c._lua_settop(L, -2);
        return out;
      }
      default:
        return null;
    }
  }
}

/** Lua 5.1's doubles print an integral value below 1e15 as its digits, as a 5.4 integer does; others stay floats. */
function pushNumber(lua: Lua, L: number, n: number): void {
  if (Number.isInteger(n) && Math.abs(n) < 1e15) lua.c._lua_pushinteger(L, BigInt(n));
  else lua.c._lua_pushnumber(L, n);
}

/** A JSON value as cjson.decode makes it: null is cjson.null, strings are UTF-8 bytes. */
function pushJson(lua: Lua, L: number, value: unknown): void {
  const c = lua.c;
  if (value === null) c._lua_pushlightuserdata(L, 0);
  else if (typeof value === "string") lua.push(L, Buffer.from(value, "utf8").toString("latin1"));
  else if (typeof value === "number") pushNumber(lua, L, value);
  else if (typeof value === "boolean") c._lua_pushboolean(L, value ? 1 : 0);
  else {
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i + 1, v]) : Object.entries(value as object);
    c._lua_createtable(L, 0, 0);
    for (const [key, item] of entries) {
      if (typeof key === "number") c._lua_pushinteger(L, BigInt(key));
      else lua.push(L, Buffer.from(key, "utf8").toString("latin1"));
      pushJson(lua, L, item);
      c._lua_rawset(L, -3);
    }
  }
}

/** Redis never lets a newline into an error or status line. */
const oneLine = (s: string): string => s.replace(/[\r\n]/g, " ");
