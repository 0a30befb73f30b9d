/**
 * Argument checks for native functions, with the messages of Lua 5.1's lauxlib ("bad argument
 * #1 to 'sub' (string expected, got nil)") and its "chunk:line:" prefix.
 */
import { LuaError } from "./errors.js";
import { number2string } from "./number.js";
import { LuaFunction, LuaTable, toArith, typeOf, type LuaRuntime, type LuaValue } from "./values.js";

/** A native function's view of its arguments. */
export class Args {
  readonly values: LuaValue[];
  readonly #name: string;
  readonly #rt: LuaRuntime;

  constructor(values: LuaValue[], name: string, rt: LuaRuntime) {
    this.values = values;
    this.#name = name;
    this.#rt = rt;
  }

  get count(): number {
    return this.values.length;
  }

  /** luaL_error: a message at the calling Lua line. */
  error(message: string): LuaError {
    return new LuaError(`${this.#rt.where(1)} ${message}`.trimStart());
  }

  /** luaL_argerror. `i` counts from 0; Lua's message counts from 1. */
  argError(i: number, message: string): LuaError {
    return this.error(`bad argument #${i + 1} to '${this.#name}' (${message})`);
  }

  #typeError(i: number, expected: string): LuaError {
    const got = i < this.values.length ? typeOf(this.values[i]) : "no value";
    return this.argError(i, `${expected} expected, got ${got}`);
  }

  any(i: number): LuaValue {
    if (i >= this.values.length) throw this.argError(i, "value expected");
    return this.values[i];
  }

  number(i: number): number {
    const n = toArith(this.values[i]);
    if (n === undefined) throw this.#typeError(i, "number");
    return n;
  }

  optNumber(i: number, fallback: number): number {
    return this.values[i] === undefined ? fallback : this.number(i);
  }

  /** luaL_checkinteger: the number truncated toward zero, as a C cast does on x86-64. */
  integer(i: number): number {
    return Math.trunc(this.number(i));
  }

  optInteger(i: number, fallback: number): number {
    return this.values[i] === undefined ? fallback : this.integer(i);
  }

  /** luaL_checklstring: strings, and numbers turned into strings. */
  string(i: number): string {
    const v = this.values[i];
    if (typeof v === "string") return v;
    if (typeof v === "number") return number2string(v);
    throw this.#typeError(i, "string");
  }

  optString(i: number, fallback: string): string {
    return this.values[i] === undefined ? fallback : this.string(i);
  }

  table(i: number): LuaTable {
    const v = this.values[i];
    if (v instanceof LuaTable) return v;
    throw this.#typeError(i, "table");
  }

  function(i: number): LuaFunction {
    const v = this.values[i];
    if (v instanceof LuaFunction) return v;
    throw this.#typeError(i, "function");
  }
}

/** Makes a native function whose body receives checked arguments. */
export function native(name: string, body: (args: Args, rt: LuaRuntime) => LuaValue[]): LuaFunction {
  return new LuaFunction(name, (values, rt) => body(new Args(values, name, rt), rt));
}

/** A library table from named natives. */
export function library(functions: Record<string, (args: Args, rt: LuaRuntime) => LuaValue[]>): LuaTable {
  const t = new LuaTable();
  for (const [name, body] of Object.entries(functions)) t.set(name, native(name, body));
  return t;
}
