/**
 * The Lua that runs scripts: wasmoon (the reference Lua 5.4 compiled to WebAssembly), an optional
 * peer dependency of surelock/testing, loaded once per process on first use. Its C API is called
 * straight on the WebAssembly exports: strings cross as bytes (Lua strings are byte strings, which
 * wasmoon's own conversions would re-encode as UTF-8), and without a wrapper's cost per call.
 */
import type { LuaWasm } from "wasmoon";

const INSTALL = "surelock/testing runs Lua scripts on wasmoon (real Lua in WebAssembly), an optional peer dependency: npm install --save-dev wasmoon";

type CName = (typeof C_API)[number];
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- only its names are used, as a type
const C_API = ["malloc", "free", "luaL_newstate", "luaL_openlibs", "lua_close", "luaL_loadbufferx", "lua_pcallk", "luaL_ref",
  "luaL_unref", "lua_sethook", "lua_error", "lua_gettop", "lua_settop", "lua_absindex", "lua_type", "lua_isinteger", "lua_tointegerx",
  "lua_tonumberx", "lua_toboolean", "lua_tolstring", "lua_pushboolean", "lua_pushinteger", "lua_pushnumber", "lua_pushlstring",
  "lua_pushcclosure", "lua_pushlightuserdata", "lua_createtable", "lua_rawgeti", "lua_rawseti", "lua_rawset", "lua_getfield", "lua_setfield"] as const;

/**
 * The C API as the WebAssembly module exports it: `_lua_pushlstring(L, s, length)` and so on.
 * `lua_Integer` arguments are bigints, and `_lua_tointegerx` answers one (read it with Number or String).
 */
export type LuaC = { readonly [F in `_${CName}`]: (...args: (number | bigint)[]) => number } & {
  readonly HEAPU8: Uint8Array;
  addFunction(fn: (...args: number[]) => number | void, signature: string): number;
};

let loading: Promise<LuaWasm> | undefined;
let loaded: Lua | undefined;
let failure: Error | undefined;

type Wasmoon = typeof import("wasmoon");

/** Starts loading wasmoon (once); resolves when scripts can run, rejects if it is not installed. */
export function loadLua(): Promise<void> {
  loading ??= import("wasmoon").then(async (m: Wasmoon & { default?: Wasmoon }) => {
    const wasm = await (m.LuaWasm ?? (m.default as Wasmoon).LuaWasm).initialize().catch((error: unknown) => {
      if (typeof require !== "function" || !/experimental-vm-modules/.test(String(error))) throw error;
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- jest runs CommonJS in a vm without the import() wasmoon's loader uses; Node's own loader has it
      const node = require("node:module") as unknown as { _load(path: string, parent: null, main: false): Wasmoon };
      return node._load(require.resolve("wasmoon"), null, false).LuaWasm.initialize();
    });
    loaded = new Lua(wasm.module as unknown as LuaC);
    return wasm;
  }, (cause: unknown) => {
    failure = new Error(INSTALL, { cause });
    throw failure;
  });
  return loading.then(() => undefined);
}

/** The loaded runtime, for synchronous use; throws if it is not loaded (yet). */
export function luaRuntime(): Lua {
  if (loaded) return loaded;
  throw failure ?? new Error("MemoryRedis: the Lua runtime is still loading: await MemoryRedisServer.ready() before running scripts through execute()");
}

export const luaLoaded = (): boolean => loaded !== undefined;

/** The C API plus byte strings (one char per byte) in and out of Lua's memory. */
export class Lua {
  readonly c: LuaC;
  readonly #lengthOut: number;
  readonly #names = new Map<string, number>();
  #scratch = 0;
  #scratchSize = 0;
  #view: Buffer<ArrayBufferLike> = Buffer.alloc(0);

  constructor(c: LuaC) {
    this.c = c;
    this.#lengthOut = c._malloc(8);
  }

  /** A C string that lives as long as the process (field names, chunk names). */
  name(s: string): number {
    let at = this.#names.get(s);
    if (at === undefined) {
      at = this.c._malloc(s.length + 1);
      this.c.HEAPU8.set([...Buffer.from(s, "latin1"), 0], at);
      this.#names.set(s, at);
    }
    return at;
  }

  /** Copies `s` into Lua's memory; the pointer stays valid until the next call. */
  write(s: string): number {
    if (s.length + 1 > this.#scratchSize) {
      if (this.#scratch) this.c._free(this.#scratch);
      this.#scratchSize = Math.max(256, 2 * (s.length + 1));
      this.#scratch = this.c._malloc(this.#scratchSize);
    }
    this.#heap().write(s, this.#scratch, "latin1");
    return this.#scratch;
  }

  push(L: number, s: string): void {
    this.c._lua_pushlstring(L, this.write(s), s.length);
  }

  /** The string (or number, as Lua prints it) at `index`. */
  read(L: number, index: number): string {
    const at = this.c._lua_tolstring(L, index, this.#lengthOut);
    const heap = this.#heap();
    return heap.toString("latin1", at, at + heap.readUInt32LE(this.#lengthOut));
  }

  /** Lua's memory as a Buffer (made again when the memory grows, which replaces its ArrayBuffer). */
  #heap(): Buffer<ArrayBufferLike> {
    const memory = this.c.HEAPU8.buffer;
    if (this.#view.buffer !== memory) this.#view = Buffer.from(memory);
    return this.#view;
  }
}
