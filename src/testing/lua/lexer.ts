/**
 * Lua 5.1 lexer. Source text is a byte string (one char per byte, as Redis hands a script to
 * Lua), so string literals come out as byte strings too. Errors use Lua's own wording
 * ("<chunk>:<line>: <message> near '<token>'"), since Redis passes them on to the caller.
 */
import { LuaError } from "./errors.js";
import { str2number } from "./number.js";

export type TokenType = "name" | "string" | "number" | "keyword" | "symbol" | "eof";

export interface Token {
  readonly type: TokenType;
  /** Keyword or symbol text, a name, a string's bytes; for a number, its source text. */
  readonly text: string;
  /** A number literal's value. */
  readonly value?: number;
  /** A string literal as Lua shows it in "near" messages (with its quotes). */
  readonly raw?: string;
  readonly line: number;
}

const KEYWORDS = new Set([
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
]);

/** Longest symbols first, so `...` wins over `..` and `.`. */
const SYMBOLS = ["...", "..", "==", "~=", "<=", ">=", "+", "-", "*", "/", "%", "^", "#", "<", ">", "=",
  "(", ")", "{", "}", "[", "]", ";", ":", ",", "."];

const isDigit = (c: string): boolean => c >= "0" && c <= "9";
const isAlpha = (c: string): boolean => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_";
const isAlnum = (c: string): boolean => isAlpha(c) || isDigit(c);
const isNewline = (c: string): boolean => c === "\n" || c === "\r";
const isSpace = (c: string): boolean => c === " " || c === "\t" || c === "\v" || c === "\f";

export class Lexer {
  readonly #src: string;
  readonly #chunk: string;
  #pos = 0;
  #line = 1;

  constructor(source: string, chunkName: string) {
    this.#src = source;
    this.#chunk = chunkName;
    // A first line starting with '#' (a Unix shebang) is skipped, as lua_load does for files.
    if (source.startsWith("#")) while (this.#pos < source.length && !isNewline(this.#char())) this.#pos++;
  }

  /** A syntax error at the current line, phrased as luaX_syntaxerror does. */
  error(message: string, near?: string, line = this.#line): LuaError {
    const where = near === undefined ? "" : ` near '${near}'`;
    return new LuaError(`${this.#chunk}:${line}: ${message}${where}`);
  }

  /** Every token of the source, ending with one `eof` token. */
  tokenize(): Token[] {
    const tokens: Token[] = [];
    for (;;) {
      const token = this.#next();
      tokens.push(token);
      if (token.type === "eof") return tokens;
    }
  }

  #char(offset = 0): string {
    return this.#src.charAt(this.#pos + offset);
  }

  #newline(): void {
    // \n, \r, \n\r and \r\n each count as one line break.
    const first = this.#char();
    this.#pos++;
    const second = this.#char();
    if (isNewline(second) && second !== first) this.#pos++;
    this.#line++;
  }

  #next(): Token {
    for (;;) {
      const c = this.#char();
      if (c === "") return { type: "eof", text: "<eof>", line: this.#line };
      if (isNewline(c)) { this.#newline(); continue; }
      if (isSpace(c)) { this.#pos++; continue; }
      if (c === "-" && this.#char(1) === "-") { this.#comment(); continue; }
      const line = this.#line;
      if (isAlpha(c)) {
        const start = this.#pos;
        while (isAlnum(this.#char())) this.#pos++;
        const word = this.#src.slice(start, this.#pos);
        return { type: KEYWORDS.has(word) ? "keyword" : "name", text: word, line };
      }
      if (isDigit(c) || (c === "." && isDigit(this.#char(1)))) return this.#number(line);
      if (c === '"' || c === "'") return this.#string(c, line);
      if (c === "[") {
        const level = this.#longBracketLevel();
        if (level >= 0) {
          const text = this.#longString(level, "string");
          const eq = "=".repeat(level);
          return { type: "string", text, raw: `[${eq}[${text}]${eq}]`, line };
        }
        if (level < -1) throw this.error("invalid long string delimiter", "[");
      }
      const symbol = SYMBOLS.find((s) => this.#src.startsWith(s, this.#pos));
      if (symbol === undefined) throw this.error("unexpected symbol", c);
      this.#pos += symbol.length;
      return { type: "symbol", text: symbol, line };
    }
  }

  #comment(): void {
    this.#pos += 2;
    if (this.#char() === "[") {
      const level = this.#longBracketLevel();
      if (level >= 0) { this.#longString(level, "comment"); return; }
    }
    while (this.#char() !== "" && !isNewline(this.#char())) this.#pos++;
  }

  /** At `[`: n for `[`, `=`*n, `[`; -1 for a lone `[`; < -1 for `[=` not followed by `[`. */
  #longBracketLevel(): number {
    let i = this.#pos + 1;
    let level = 0;
    while (this.#src.charAt(i) === "=") { level++; i++; }
    if (this.#src.charAt(i) === "[") return level;
    return level === 0 ? -1 : -2 - level;
  }

  #longString(level: number, what: "string" | "comment"): string {
    const line = this.#line;
    this.#pos += level + 2;
    // A newline right after the opening bracket is not part of the string.
    if (isNewline(this.#char())) this.#newline();
    let out = "";
    for (;;) {
      const c = this.#char();
      if (c === "") {
        throw this.error(`unfinished long ${what}`, "<eof>", what === "comment" ? this.#line : line === this.#line ? line : this.#line);
      }
      if (c === "]" && this.#src.startsWith("=".repeat(level) + "]", this.#pos + 1)) {
        this.#pos += level + 2;
        return out;
      }
      if (isNewline(c)) { this.#newline(); out += "\n"; continue; }
      out += c;
      this.#pos++;
    }
  }

  #number(line: number): Token {
    const start = this.#pos;
    // As Lua 5.1's read_numeral: digits and dots, an exponent with its sign, then any alnum run.
    while (isDigit(this.#char()) || this.#char() === ".") this.#pos++;
    if (this.#char() === "e" || this.#char() === "E") {
      this.#pos++;
      if (this.#char() === "+" || this.#char() === "-") this.#pos++;
    }
    while (isAlnum(this.#char())) this.#pos++;
    const text = this.#src.slice(start, this.#pos);
    const value = str2number(text);
    if (value === undefined) throw this.error("malformed number", text);
    return { type: "number", text, value, line };
  }

  #string(quote: string, line: number): Token {
    const start = this.#pos;
    this.#pos++;
    let out = "";
    for (;;) {
      const c = this.#char();
      if (c === "") throw this.error("unfinished string", "<eof>");
      if (isNewline(c)) throw this.error("unfinished string", this.#src.slice(start, this.#pos));
      if (c === quote) { this.#pos++; return { type: "string", text: out, raw: quote + out + quote, line }; }
      if (c !== "\\") { out += c; this.#pos++; continue; }
      this.#pos++;
      const e = this.#char();
      const simple: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };
      if (e in simple) { out += simple[e]; this.#pos++; continue; }
      if (isNewline(e)) { this.#newline(); out += "\n"; continue; }
      if (e === "") continue;
      if (isDigit(e)) {
        let code = 0;
        for (let i = 0; i < 3 && isDigit(this.#char()); i++) { code = code * 10 + Number(this.#char()); this.#pos++; }
        if (code > 255) throw this.error("escape sequence too large", this.#src.slice(start, this.#pos));
        out += String.fromCharCode(code);
        continue;
      }
      // Lua 5.1 keeps any other escaped character as itself (\\, \", \', and the rest).
      out += e;
      this.#pos++;
    }
  }
}
