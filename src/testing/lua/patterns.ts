/**
 * Lua 5.1 patterns: character classes (%a %d %s %w ... and their complements, in the C locale),
 * sets [...], the quantifiers * + - ?, anchors, captures (including position captures `()`),
 * back references %1-%9, %b and %f. Strings and patterns are byte strings.
 */

export const CAP_UNFINISHED = -1;
export const CAP_POSITION = -2;
const MAX_CAPTURES = 32;

/** Raised for a malformed pattern; the string library turns it into a Lua error. */
export class PatternError extends Error {}

function classMatches(code: number, cls: string): boolean {
  const lower = cls.toLowerCase();
  let yes: boolean;
  switch (lower) {
    case "a": yes = (code >= 65 && code <= 90) || (code >= 97 && code <= 122); break;
    case "c": yes = code < 32 || code === 127; break;
    case "d": yes = code >= 48 && code <= 57; break;
    case "l": yes = code >= 97 && code <= 122; break;
    case "p": yes = (code >= 33 && code <= 47) || (code >= 58 && code <= 64) || (code >= 91 && code <= 96) || (code >= 123 && code <= 126); break;
    case "s": yes = code === 32 || (code >= 9 && code <= 13); break;
    case "u": yes = code >= 65 && code <= 90; break;
    case "w": yes = (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122); break;
    case "x": yes = (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102); break;
    case "z": yes = code === 0; break;
    default: return cls.charCodeAt(0) === code;
  }
  // An upper-case class letter is the complement.
  return cls === lower ? yes : !yes;
}

interface Capture {
  init: number;
  len: number;
}

/** One match attempt of `pattern` against `src`. */
export class Matcher {
  readonly src: string;
  readonly pat: string;
  level = 0;
  readonly captures: Capture[] = [];

  constructor(src: string, pat: string) {
    this.src = src;
    this.pat = pat;
  }

  /** Where the match starting at `s` with pattern position `p` ends, or -1. */
  match(s: number, p: number): number {
    const { src, pat } = this;
    for (;;) {
      if (p === pat.length) return s;
      const c = pat.charAt(p);
      if (c === "(") {
        return pat.charAt(p + 1) === ")" ? this.#startCapture(s, p + 2, CAP_POSITION) : this.#startCapture(s, p + 1, CAP_UNFINISHED);
      }
      if (c === ")") return this.#endCapture(s, p + 1);
      if (c === "$" && p + 1 === pat.length) return s === src.length ? s : -1;
      if (c === "%") {
        const next = pat.charAt(p + 1);
        if (next === "b") {
          s = this.#matchBalance(s, p + 2);
          if (s === -1) return -1;
          p += 4;
          continue;
        }
        if (next === "f") {
          p += 2;
          if (pat.charAt(p) !== "[") throw new PatternError("missing '[' after '%f' in pattern");
          const end = this.#classEnd(p);
          const previous = s === 0 ? 0 : src.charCodeAt(s - 1);
          const current = s < src.length ? src.charCodeAt(s) : 0;
          if (this.#inSet(previous, p, end - 1) || !this.#inSet(current, p, end - 1)) return -1;
          p = end;
          continue;
        }
        if (next >= "0" && next <= "9") {
          s = this.#matchBackReference(s, next);
          if (s === -1) return -1;
          p += 2;
          continue;
        }
      }
      const end = this.#classEnd(p);
      const matches = s < src.length && this.#single(src.charCodeAt(s), p, end);
      const quantifier = pat.charAt(end);
      if (quantifier === "?") {
        if (matches) {
          const r = this.match(s + 1, end + 1);
          if (r !== -1) return r;
        }
        p = end + 1;
        continue;
      }
      if (quantifier === "*") return this.#maxExpand(s, p, end);
      if (quantifier === "+") return matches ? this.#maxExpand(s + 1, p, end) : -1;
      if (quantifier === "-") return this.#minExpand(s, p, end);
      if (!matches) return -1;
      s++;
      p = end;
    }
  }

  /** The value of capture `i` for a match from `s` to `e` (capture 0 is the whole match when there are none). */
  capture(i: number, s: number, e: number): string | number {
    if (i >= this.level) {
      if (i === 0) return this.src.slice(s, e);
      throw new PatternError("invalid capture index");
    }
    const cap = this.captures[i] as Capture;
    if (cap.len === CAP_UNFINISHED) throw new PatternError("unfinished capture");
    if (cap.len === CAP_POSITION) return cap.init + 1;
    return this.src.slice(cap.init, cap.init + cap.len);
  }

  /** Every capture, or the whole match when the pattern has none (and `whole` is set). */
  captureList(s: number, e: number, whole: boolean): (string | number)[] {
    const n = this.level === 0 && whole ? 1 : this.level;
    const out: (string | number)[] = [];
    for (let i = 0; i < n; i++) out.push(this.capture(i, s, e));
    return out;
  }

  #classEnd(p: number): number {
    const pat = this.pat;
    const c = pat.charAt(p++);
    if (c === "%") {
      if (p >= pat.length) throw new PatternError("malformed pattern (ends with '%')");
      return p + 1;
    }
    if (c === "[") {
      if (pat.charAt(p) === "^") p++;
      // The first character of a set is literal, even `]`.
      do {
        if (p >= pat.length) throw new PatternError("malformed pattern (missing ']')");
        const x = pat.charAt(p++);
        if (x === "%") {
          if (p >= pat.length) throw new PatternError("malformed pattern (missing ']')");
          p++;
        }
      } while (pat.charAt(p) !== "]");
      return p + 1;
    }
    return p;
  }

  #single(code: number, p: number, end: number): boolean {
    const c = this.pat.charAt(p);
    if (c === ".") return true;
    if (c === "%") return classMatches(code, this.pat.charAt(p + 1));
    if (c === "[") return this.#inSet(code, p, end - 1);
    return this.pat.charCodeAt(p) === code;
  }

  /** Whether `code` is in the set from `[` at `p` to `]` at `close`. */
  #inSet(code: number, p: number, close: number): boolean {
    const pat = this.pat;
    let positive = true;
    if (pat.charAt(p + 1) === "^") { positive = false; p++; }
    while (++p < close) {
      if (pat.charAt(p) === "%") {
        p++;
        if (classMatches(code, pat.charAt(p))) return positive;
      } else if (pat.charAt(p + 1) === "-" && p + 2 < close) {
        if (pat.charCodeAt(p) <= code && code <= pat.charCodeAt(p + 2)) return positive;
        p += 2;
      } else if (pat.charCodeAt(p) === code) {
        return positive;
      }
    }
    return !positive;
  }

  #maxExpand(s: number, p: number, end: number): number {
    let i = 0;
    while (s + i < this.src.length && this.#single(this.src.charCodeAt(s + i), p, end)) i++;
    for (; i >= 0; i--) {
      const r = this.match(s + i, end + 1);
      if (r !== -1) return r;
    }
    return -1;
  }

  #minExpand(s: number, p: number, end: number): number {
    for (;;) {
      const r = this.match(s, end + 1);
      if (r !== -1) return r;
      if (s < this.src.length && this.#single(this.src.charCodeAt(s), p, end)) s++;
      else return -1;
    }
  }

  #startCapture(s: number, p: number, what: number): number {
    if (this.level >= MAX_CAPTURES) throw new PatternError("too many captures");
    this.captures[this.level] = { init: s, len: what };
    this.level++;
    const r = this.match(s, p);
    if (r === -1) this.level--;
    return r;
  }

  #endCapture(s: number, p: number): number {
    let open = -1;
    for (let i = this.level - 1; i >= 0; i--) {
      if (this.captures[i]?.len === CAP_UNFINISHED) { open = i; break; }
    }
    if (open < 0) throw new PatternError("invalid pattern capture");
    const cap = this.captures[open] as Capture;
    cap.len = s - cap.init;
    const r = this.match(s, p);
    if (r === -1) cap.len = CAP_UNFINISHED;
    return r;
  }

  #matchBalance(s: number, p: number): number {
    if (p + 1 >= this.pat.length) throw new PatternError("unbalanced pattern");
    const src = this.src;
    if (s >= src.length || src.charAt(s) !== this.pat.charAt(p)) return -1;
    const open = this.pat.charAt(p);
    const close = this.pat.charAt(p + 1);
    let depth = 1;
    while (++s < src.length) {
      const c = src.charAt(s);
      if (c === close) {
        if (--depth === 0) return s + 1;
      } else if (c === open) {
        depth++;
      }
    }
    return -1;
  }

  #matchBackReference(s: number, digit: string): number {
    const i = digit.charCodeAt(0) - 49;
    const cap = this.captures[i];
    if (i < 0 || i >= this.level || !cap || cap.len === CAP_UNFINISHED) throw new PatternError("invalid capture index");
    const text = this.src.slice(cap.init, cap.init + cap.len);
    return this.src.startsWith(text, s) ? s + text.length : -1;
  }
}

/** Characters that make a pattern more than plain text (string.find then searches literally). */
export const hasSpecials = (pattern: string): boolean => /[\^$*+?.([%-]/.test(pattern);
