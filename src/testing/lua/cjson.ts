/**
 * cjson as Redis bundles it (lua-cjson 2.1 defaults): numbers printed with 14 significant
 * digits, `/` escaped, empty tables as objects, sparse arrays refused, JSON null as the
 * cjson.null userdata, and lua-cjson's error messages.
 */
import { library, type Args } from "./args.js";
import { number2string, str2number } from "./number.js";
import { LuaTable, LuaUserdata, typeOf, type LuaValue } from "./values.js";

export const JSON_NULL = new LuaUserdata("(nil)");

const MAX_DEPTH = 1000;
/** lua-cjson's encode_sparse_array defaults: ratio 2, always safe up to index 10. */
const SPARSE_RATIO = 2;
const SPARSE_SAFE = 10;

function escapeString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    const code = s.charCodeAt(i);
    switch (c) {
      case '"': out += '\\"'; break;
      case "\\": out += "\\\\"; break;
      case "/": out += "\\/"; break;
      case "\b": out += "\\b"; break;
      case "\f": out += "\\f"; break;
      case "\n": out += "\\n"; break;
      case "\r": out += "\\r"; break;
      case "\t": out += "\\t"; break;
      default:
        out += code < 0x20 || code === 0x7f ? `\\u${code.toString(16).padStart(4, "0")}` : c;
    }
  }
  return `${out}"`;
}

/** The array length of a table that is a (not too sparse) array, -1 for an object. */
function arrayLength(a: Args, t: LuaTable): number {
  let max = 0;
  let count = 0;
  for (let entry = t.next(undefined); entry; entry = t.next(entry[0])) {
    const k = entry[0];
    if (typeof k !== "number" || !Number.isInteger(k) || k < 1) return -1;
    if (k > max) max = k;
    count++;
  }
  if (max > SPARSE_SAFE && max > count * SPARSE_RATIO) throw a.error("Cannot serialise table: excessively sparse array");
  return max;
}

function encode(a: Args, v: LuaValue, depth: number): string {
  if (v === undefined || v === JSON_NULL) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw a.error("Cannot serialise number: must not be NaN or Inf");
    return number2string(v);
  }
  if (typeof v === "string") return escapeString(v);
  if (v instanceof LuaTable) {
    if (depth > MAX_DEPTH) throw a.error(`Cannot serialise, excessive nesting (${depth})`);
    const length = arrayLength(a, v);
    if (length > 0) {
      const items: string[] = [];
      for (let i = 1; i <= length; i++) items.push(encode(a, v.get(i), depth + 1));
      return `[${items.join(",")}]`;
    }
    const fields: string[] = [];
    for (let entry = v.next(undefined); entry; entry = v.next(entry[0])) {
      const [k, value] = entry;
      let key: string;
      if (typeof k === "string") key = k;
      else if (typeof k === "number") key = number2string(k);
      else throw a.error(`Cannot serialise ${typeOf(k)}: table key must be a number or string`);
      fields.push(`${escapeString(key)}:${encode(a, value, depth + 1)}`);
    }
    return `{${fields.join(",")}}`;
  }
  throw a.error(`Cannot serialise ${typeOf(v)}: type not supported`);
}

type Token =
  | { type: "T_OBJ_BEGIN" | "T_OBJ_END" | "T_ARR_BEGIN" | "T_ARR_END" | "T_COLON" | "T_COMMA" | "T_END"; at: number }
  | { type: "T_STRING"; at: number; value: string }
  | { type: "T_NUMBER"; at: number; value: number }
  | { type: "T_BOOLEAN"; at: number; value: boolean }
  | { type: "T_NULL"; at: number }
  | { type: "T_ERROR"; at: number; message: string };

const NUMBER = /^[+-]?(0[xX][0-9a-fA-F]+|inf(inity)?|nan|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/i;

/** Turns \uXXXX (and surrogate pairs) into UTF-8 bytes. */
function utf8(codePoint: number): string {
  return Buffer.from(String.fromCodePoint(codePoint), "utf8").toString("latin1");
}

class JsonReader {
  readonly #text: string;
  readonly #a: Args;
  #pos = 0;

  constructor(a: Args, text: string) {
    this.#a = a;
    this.#text = text;
  }

  #token(): Token {
    const text = this.#text;
    while (/[ \t\n\r]/.test(text.charAt(this.#pos))) this.#pos++;
    const at = this.#pos + 1;
    const c = text.charAt(this.#pos);
    const single: Record<string, Token["type"]> = { "{": "T_OBJ_BEGIN", "}": "T_OBJ_END", "[": "T_ARR_BEGIN", "]": "T_ARR_END", ":": "T_COLON", ",": "T_COMMA" };
    if (c === "") return { type: "T_END", at };
    const s = single[c];
    if (s) { this.#pos++; return { type: s, at } as Token; }
    if (c === '"') return this.#string(at);
    for (const [word, token] of [["true", { type: "T_BOOLEAN", at, value: true }], ["false", { type: "T_BOOLEAN", at, value: false }], ["null", { type: "T_NULL", at }]] as const) {
      if (text.startsWith(word, this.#pos)) { this.#pos += word.length; return token; }
    }
    if (c === "-" || (c >= "0" && c <= "9") || /[iInN]/.test(c)) {
      const m = NUMBER.exec(text.slice(this.#pos));
      const value = m ? str2number(m[0]) : undefined;
      if (m && value !== undefined) { this.#pos += m[0].length; return { type: "T_NUMBER", at, value }; }
    }
    return { type: "T_ERROR", at, message: "invalid token" };
  }

  #string(at: number): Token {
    const text = this.#text;
    let out = "";
    this.#pos++;
    for (;;) {
      const c = text.charAt(this.#pos);
      if (c === "") return { type: "T_ERROR", at: this.#pos + 1, message: "unexpected end of string" };
      this.#pos++;
      if (c === '"') return { type: "T_STRING", at, value: out };
      if (c !== "\\") { out += c; continue; }
      const e = text.charAt(this.#pos++);
      const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e in simple) { out += simple[e]; continue; }
      if (e === "u") {
        const hex = text.slice(this.#pos, this.#pos + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return { type: "T_ERROR", at, message: "invalid unicode escape code" };
        this.#pos += 4;
        let code = parseInt(hex, 16);
        if (code >= 0xd800 && code <= 0xdbff && text.startsWith("\\u", this.#pos)) {
          const low = parseInt(text.slice(this.#pos + 2, this.#pos + 6), 16);
          if (low >= 0xdc00 && low <= 0xdfff) { code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00); this.#pos += 6; }
        }
        out += utf8(code);
        continue;
      }
      return { type: "T_ERROR", at: at + 1, message: "invalid escape code" };
    }
  }

  #fail(expected: string, token: Token): never {
    const found = token.type === "T_ERROR" ? token.message : token.type;
    throw this.#a.error(`Expected ${expected} but found ${found} at character ${token.at}`);
  }

  document(): LuaValue {
    const value = this.#value(this.#token(), 1);
    const end = this.#token();
    if (end.type !== "T_END") this.#fail("the end", end);
    return value;
  }

  #value(token: Token, depth: number): LuaValue {
    switch (token.type) {
      case "T_STRING": case "T_NUMBER": case "T_BOOLEAN": return token.value;
      case "T_NULL": return JSON_NULL;
      case "T_OBJ_BEGIN": case "T_ARR_BEGIN": {
        if (depth > MAX_DEPTH) throw this.#a.error(`Found too many nested data structures (${depth}) at character ${token.at}`);
        return token.type === "T_OBJ_BEGIN" ? this.#object(depth) : this.#array(depth);
      }
      default: return this.#fail("value", token);
    }
  }

  #object(depth: number): LuaTable {
    const t = new LuaTable();
    let token = this.#token();
    if (token.type === "T_OBJ_END") return t;
    for (;;) {
      if (token.type !== "T_STRING") this.#fail("object key string", token);
      const key = token.value;
      const colon = this.#token();
      if (colon.type !== "T_COLON") this.#fail("colon", colon);
      t.set(key, this.#value(this.#token(), depth + 1));
      const next = this.#token();
      if (next.type === "T_OBJ_END") return t;
      if (next.type !== "T_COMMA") this.#fail("comma or object end", next);
      token = this.#token();
    }
  }

  #array(depth: number): LuaTable {
    const t = new LuaTable();
    let token = this.#token();
    if (token.type === "T_ARR_END") return t;
    for (let i = 1; ; i++) {
      t.set(i, this.#value(token, depth + 1));
      const next = this.#token();
      if (next.type === "T_ARR_END") return t;
      if (next.type !== "T_COMMA") this.#fail("comma or array end", next);
      token = this.#token();
    }
  }
}

export function cjsonLibrary(): LuaTable {
  const lib = library({
    encode: (a) => {
      a.any(0);
      return [encode(a, a.values[0], 1)];
    },
    decode: (a) => [new JsonReader(a, a.string(0)).document()],
  });
  lib.set("null", JSON_NULL);
  return lib;
}
