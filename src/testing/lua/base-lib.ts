/** Lua 5.1's base functions that Redis scripts may use (no load, dofile, module or coroutines). */
import { library, native, type Args } from "./args.js";
import { LuaError } from "./errors.js";
import { ScriptKilledError } from "./call-stack.js";
import { str2number, str2numberBase } from "./number.js";
import { LuaTable, tostring, truthy, typeOf, type LuaRuntime, type LuaValue } from "./values.js";

/** The most values `unpack` may return (Lua's stack limit, LUAI_MAXCSTACK). */
const MAX_RESULTS = 8000;

function toStringMeta(v: LuaValue, rt: LuaRuntime): string {
  if (v instanceof LuaTable && v.metatable) {
    const meta = v.metatable.get("__tostring");
    if (meta !== undefined) {
      const out = rt.call(meta, [v])[0];
      if (typeof out !== "string") throw new LuaError("'__tostring' must return a string");
      return out;
    }
  }
  return tostring(v);
}

function next(a: Args): LuaValue[] {
  const t = a.table(0);
  const entry = t.next(a.values[1]);
  if (entry === null) throw a.error("invalid key to 'next'");
  return entry ?? [undefined];
}

const nextFunction = native("next", next);

const ipairsStep = native("ipairs_aux", (a) => {
  const t = a.table(0);
  const i = a.integer(1) + 1;
  const v = t.get(i);
  return v === undefined ? [] : [i, v];
});

/** Installs the base functions into `globals`. */
export function installBase(globals: LuaTable): void {
  const lib = library({
    tonumber: (a) => {
      const base = a.optInteger(1, 10);
      if (base === 10) {
        a.any(0);
        const v = a.values[0];
        return [typeof v === "number" ? v : typeof v === "string" ? str2number(v) : undefined];
      }
      const s = a.string(0);
      if (base < 2 || base > 36) throw a.argError(1, "base out of range");
      return [str2numberBase(s, base)];
    },
    tostring: (a, rt) => [toStringMeta(a.any(0), rt)],
    type: (a) => [typeOf(a.any(0))],
    next: (a) => next(a),
    pairs: (a) => [nextFunction, a.table(0), undefined],
    ipairs: (a) => [ipairsStep, a.table(0), 0],
    select: (a) => {
      const first = a.values[0];
      if (typeof first === "string" && first.startsWith("#")) return [a.count - 1];
      const n = a.count;
      let i = a.integer(0);
      if (i < 0) i = n + i;
      else if (i > n) i = n;
      if (i < 1) throw a.argError(0, "index out of range");
      return a.values.slice(i);
    },
    unpack: (a) => {
      const t = a.table(0);
      const i = a.optInteger(1, 1);
      const j = a.values[2] === undefined ? t.length() : a.integer(2);
      if (i > j) return [];
      if (j - i >= MAX_RESULTS) throw a.error("too many results to unpack");
      const out: LuaValue[] = [];
      for (let k = i; k <= j; k++) out.push(t.get(k));
      return out;
    },
    error: (a, rt) => {
      const value = a.values[0];
      const level = a.optInteger(1, 1);
      if (typeof value === "string" && level > 0) throw new LuaError(`${rt.where(level)} ${value}`.trimStart());
      throw new LuaError(value);
    },
    pcall: (a, rt) => {
      a.any(0);
      try {
        return [true, ...rt.call(a.values[0], a.values.slice(1))];
      } catch (error) {
        if (error instanceof ScriptKilledError || !(error instanceof LuaError)) throw error;
        return [false, error.value];
      }
    },
    assert: (a) => {
      if (!truthy(a.any(0))) throw a.error(a.optString(1, "assertion failed!"));
      return a.values;
    },
    rawget: (a) => [a.table(0).get(a.any(1))],
    rawset: (a) => {
      const t = a.table(0);
      const key = a.any(1);
      a.any(2);
      if (key === undefined) throw a.error("table index is nil");
      t.set(key, a.values[2]);
      return [t];
    },
    rawequal: (a) => [a.any(0) === a.any(1)],
    setmetatable: (a) => {
      const t = a.table(0);
      const meta = a.values[1];
      if (meta !== undefined && !(meta instanceof LuaTable)) throw a.argError(1, "nil or table expected");
      t.metatable = meta;
      return [t];
    },
    getmetatable: (a) => {
      const v = a.any(0);
      return [v instanceof LuaTable ? v.metatable : undefined];
    },
  });
  for (let entry = lib.next(undefined); entry; entry = lib.next(entry[0])) globals.set(entry[0], entry[1]);
  globals.set("_G", globals);
  globals.set("_VERSION", "Lua 5.1");
}
