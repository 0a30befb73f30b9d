/**
 * Lua values in JavaScript: nil is `undefined`, booleans and numbers (doubles) are themselves,
 * strings are byte strings (one char per byte), tables and functions are the classes below.
 */
import { number2string, str2number } from "./number.js";

export type LuaValue = undefined | boolean | number | string | LuaTable | LuaFunction | LuaUserdata;

/** What a native function may ask of the interpreter that called it. */
export interface LuaRuntime {
  /** Calls any Lua value as a function. */
  call(fn: LuaValue, args: LuaValue[]): LuaValue[];
  /** "chunk:line:" of the Lua function `level` levels up (1: the caller of the native). */
  where(level: number): string;
  /** The `<` operator (numbers, or strings by bytes; anything else is an error). */
  lessThan(a: LuaValue, b: LuaValue): boolean;
}

export type NativeCall = (args: LuaValue[], runtime: LuaRuntime) => LuaValue[];

let nextAddress = 0x5581c0a0;
const address = (): string => `0x${(nextAddress += 0x40).toString(16).padStart(8, "0")}`;

export class LuaFunction {
  readonly name: string;
  readonly call: NativeCall;
  readonly #address = address();
  constructor(name: string, call: NativeCall) {
    this.name = name;
    this.call = call;
  }
  toString(): string {
    return `function: ${this.#address}`;
  }
}

/** Light userdata, such as cjson.null. */
export class LuaUserdata {
  readonly label: string;
  constructor(label: string) {
    this.label = label;
  }
  toString(): string {
    return `userdata: ${this.label}`;
  }
}

/** A table key: any value but nil and NaN. */
export type LuaKey = Exclude<LuaValue, undefined>;

/**
 * A Lua table: an array part (keys 1..n, never a nil inside) and a hash part in insertion
 * order. A hash entry set to nil stays as a tombstone until the next new key, so `next` keeps
 * working while a loop clears fields, as Lua allows.
 */
export class LuaTable {
  metatable: LuaTable | undefined;
  readonly #array: LuaValue[] = [];
  readonly #hash = new Map<LuaKey, LuaValue>();
  #tombstones = 0;
  #order: LuaKey[] | undefined;
  #position: Map<LuaKey, number> | undefined;
  readonly #address = address();

  /** A table holding `values` at 1..n (stopping at the first nil, as a sequence). */
  static of(values: readonly LuaValue[]): LuaTable {
    const t = new LuaTable();
    for (let i = 0; i < values.length; i++) t.set(i + 1, values[i]);
    return t;
  }

  get(key: LuaValue): LuaValue {
    if (typeof key === "number" && Number.isInteger(key) && key >= 1 && key <= this.#array.length) return this.#array[key - 1];
    if (key === undefined) return undefined;
    return this.#hash.get(key);
  }

  /** Sets a field; `key` must not be nil or NaN (the interpreter checks, with Lua's message). */
  set(key: LuaKey, value: LuaValue): void {
    const array = this.#array;
    if (typeof key === "number" && Number.isInteger(key) && key >= 1) {
      if (key <= array.length) {
        if (value !== undefined) { array[key - 1] = value; return; }
        // Keys after a new hole move to the hash part, so the array part stays hole-free.
        const tail = array.splice(key - 1);
        for (let i = 1; i < tail.length; i++) this.#setHash(key + i, tail[i]);
        return;
      }
      if (key === array.length + 1 && value !== undefined) {
        if (this.#hash.has(key)) this.#deleteHash(key);
        array.push(value);
        // Pull the following keys over from the hash part.
        for (let next = array.length + 1; this.#hash.get(next) !== undefined; next++) {
          array.push(this.#hash.get(next));
          this.#deleteHash(next);
        }
        return;
      }
    }
    this.#setHash(key, value);
  }

  #setHash(key: LuaKey, value: LuaValue): void {
    const hash = this.#hash;
    if (value === undefined) {
      if (hash.get(key) !== undefined) { hash.set(key, undefined); this.#tombstones++; }
      return;
    }
    if (!hash.has(key)) {
      if (this.#tombstones > 0) {
        for (const [k, v] of hash) if (v === undefined) hash.delete(k);
        this.#tombstones = 0;
      }
      this.#order = undefined;
    } else if (hash.get(key) === undefined) {
      this.#tombstones--;
    }
    hash.set(key, value);
  }

  #deleteHash(key: LuaKey): void {
    if (this.#hash.get(key) === undefined && this.#hash.has(key)) this.#tombstones--;
    this.#hash.delete(key);
    this.#order = undefined;
  }

  /** The `#` operator: a border (n with t[n] non-nil and t[n+1] nil, or 0). */
  length(): number {
    return this.#array.length;
  }

  /** `next(t, key)`: the entry after `key` (the first for nil); undefined at the end; null for a key not in the table. */
  next(key: LuaValue): [LuaKey, LuaValue] | undefined | null {
    const array = this.#array;
    let from = 0;
    if (key !== undefined) {
      if (typeof key === "number" && Number.isInteger(key) && key >= 1 && key <= array.length) {
        if (key < array.length) return [key + 1, array[key]];
      } else {
        this.#indexOrder();
        const at = this.#position?.get(key);
        if (at === undefined) return null;
        from = at + 1;
      }
    } else if (array.length > 0) {
      return [1, array[0]];
    }
    const order = this.#indexOrder();
    for (let i = from; i < order.length; i++) {
      const k = order[i] as LuaKey;
      const v = this.#hash.get(k);
      if (v !== undefined) return [k, v];
    }
    return undefined;
  }

  #indexOrder(): LuaKey[] {
    if (!this.#order) {
      this.#order = [...this.#hash.keys()];
      this.#position = new Map(this.#order.map((k, i) => [k, i]));
    }
    return this.#order;
  }

  /** The array part's values 1..n. */
  sequence(): LuaValue[] {
    return this.#array.slice();
  }

  /** The largest positive numeric key (table.maxn). */
  maxn(): number {
    let max = this.#array.length;
    for (const [k, v] of this.#hash) if (v !== undefined && typeof k === "number" && k > max) max = k;
    return max;
  }

  toString(): string {
    return `table: ${this.#address}`;
  }
}

export function typeOf(v: LuaValue): string {
  if (v === undefined) return "nil";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "number") return "number";
  if (typeof v === "string") return "string";
  if (v instanceof LuaTable) return "table";
  if (v instanceof LuaFunction) return "function";
  return "userdata";
}

export const truthy = (v: LuaValue): boolean => v !== undefined && v !== false;

/** tostring() without metamethods. */
export function tostring(v: LuaValue): string {
  if (v === undefined) return "nil";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return number2string(v);
  if (typeof v === "string") return v;
  return v.toString();
}

/** A value as an arithmetic operand: numbers, and strings that read as numbers. */
export const toArith = (v: LuaValue): number | undefined =>
  typeof v === "number" ? v : typeof v === "string" ? str2number(v) : undefined;
