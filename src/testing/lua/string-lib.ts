/** Lua 5.1's string library (byte strings, "C" locale). */
import { library, native, type Args } from "./args.js";
import { format } from "./format.js";
import { hasSpecials, Matcher, PatternError } from "./patterns.js";
import { LuaTable, tostring, typeOf, type LuaRuntime, type LuaValue } from "./values.js";

/** A relative string position (negative counts from the end) made absolute, at least 0. */
function absolute(pos: number, length: number): number {
  if (pos < 0) pos += length + 1;
  return pos >= 0 ? pos : 0;
}

/** Runs pattern code, turning a malformed pattern into a Lua error at the caller's line. */
function withPattern<T>(a: Args, body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof PatternError) throw a.error(error.message);
    throw error;
  }
}

function find(a: Args, isFind: boolean): LuaValue[] {
  const s = a.string(0);
  const pattern = a.string(1);
  let init = absolute(a.optInteger(2, 1), s.length) - 1;
  if (init < 0) init = 0;
  else if (init > s.length) init = s.length;
  const plain = a.values[3] !== undefined && a.values[3] !== false;
  if (isFind && (plain || !hasSpecials(pattern))) {
    const at = s.indexOf(pattern, init);
    return at < 0 ? [undefined] : [at + 1, at + pattern.length];
  }
  return withPattern(a, () => {
    const anchored = pattern.startsWith("^");
    const p = anchored ? 1 : 0;
    for (let start = init; start <= s.length; start++) {
      const m = new Matcher(s, pattern);
      const end = m.match(start, p);
      if (end !== -1) {
        return isFind ? [start + 1, end, ...m.captureList(start, end, false)] : m.captureList(start, end, true);
      }
      if (anchored) break;
    }
    return [undefined];
  });
}

function gmatch(a: Args): LuaValue[] {
  const s = a.string(0);
  const pattern = a.string(1);
  let position = 0;
  const iterator = native("gmatch_aux", (inner) => withPattern(inner, () => {
    for (let start = position; start <= s.length; start++) {
      const m = new Matcher(s, pattern);
      const end = m.match(start, 0);
      if (end !== -1) {
        // An empty match moves on by one, so the loop ends.
        position = end === start ? end + 1 : end;
        return m.captureList(start, end, true);
      }
    }
    return [];
  }));
  return [iterator];
}

function gsub(a: Args, rt: LuaRuntime): LuaValue[] {
  const s = a.string(0);
  const pattern = a.string(1);
  const repl = a.values[2];
  const kind = typeOf(repl);
  if (!["number", "string", "function", "table"].includes(kind)) throw a.argError(2, "string/function/table expected");
  const max = a.optInteger(3, s.length + 1);
  return withPattern(a, () => {
    const anchored = pattern.startsWith("^");
    const p = anchored ? 1 : 0;
    let out = "";
    let at = 0;
    let count = 0;
    while (count < max) {
      const m = new Matcher(s, pattern);
      const end = m.match(at, p);
      if (end !== -1) {
        count++;
        out += replacement(a, rt, m, at, end, repl);
      }
      if (end !== -1 && end > at) at = end;
      else if (at < s.length) out += s.charAt(at++);
      else break;
      if (anchored) break;
    }
    return [out + s.slice(at), count];
  });
}

function replacement(a: Args, rt: LuaRuntime, m: Matcher, start: number, end: number, repl: LuaValue): string {
  const whole = m.src.slice(start, end);
  if (typeof repl === "string" || typeof repl === "number") {
    const text = tostring(repl);
    let out = "";
    for (let i = 0; i < text.length; i++) {
      const c = text.charAt(i);
      if (c !== "%") { out += c; continue; }
      const d = text.charAt(++i);
      if (d < "0" || d > "9") out += d;
      else if (d === "0") out += whole;
      else out += tostring(m.capture(d.charCodeAt(0) - 49, start, end));
    }
    return out;
  }
  const first = m.capture(0, start, end);
  const value = repl instanceof LuaTable ? repl.get(first) : rt.call(repl, m.captureList(start, end, true))[0];
  if (value === undefined || value === false) return whole;
  if (typeof value !== "string" && typeof value !== "number") throw a.error(`invalid replacement value (a ${typeOf(value)})`);
  return tostring(value);
}

export function stringLibrary(): LuaTable {
  return library({
    len: (a) => [a.string(0).length],
    sub: (a) => {
      const s = a.string(0);
      let start = absolute(a.integer(1), s.length);
      let end = absolute(a.optInteger(2, -1), s.length);
      if (start < 1) start = 1;
      if (end > s.length) end = s.length;
      return [start <= end ? s.slice(start - 1, end) : ""];
    },
    upper: (a) => [a.string(0).replace(/[a-z]+/g, (x) => x.toUpperCase())],
    lower: (a) => [a.string(0).replace(/[A-Z]+/g, (x) => x.toLowerCase())],
    rep: (a) => {
      const s = a.string(0);
      const n = a.integer(1);
      if (n > 0 && s.length * n > 512 * 1024 * 1024) throw a.error("not enough memory");
      return [n > 0 ? s.repeat(n) : ""];
    },
    reverse: (a) => [a.string(0).split("").reverse().join("")],
    byte: (a) => {
      const s = a.string(0);
      let start = absolute(a.optInteger(1, 1), s.length);
      const endDefault = start;
      let end = absolute(a.optInteger(2, endDefault), s.length);
      if (start <= 0) start = 1;
      if (end > s.length) end = s.length;
      const out: LuaValue[] = [];
      for (let i = start; i <= end; i++) out.push(s.charCodeAt(i - 1));
      return out;
    },
    char: (a) => {
      let out = "";
      for (let i = 0; i < a.count; i++) {
        const c = a.integer(i);
        if (c < 0 || c > 255) throw a.argError(i, "invalid value");
        out += String.fromCharCode(c);
      }
      return [out];
    },
    format: (a) => [format(a)],
    find: (a) => find(a, true),
    match: (a) => find(a, false),
    gmatch: (a) => gmatch(a),
    gsub: (a, rt) => gsub(a, rt),
  });
}
