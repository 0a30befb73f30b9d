/**
 * The parser's view of the tokens: the current one, a look ahead, and the checks that consume
 * a token or throw Lua 5.1's syntax error for it.
 */
import { Lexer, type Token } from "./lexer.js";

/** A position in a chunk's tokens; the parsers extend it. */
export class TokenCursor {
  readonly #lexer: Lexer;
  readonly #tokens: Token[];
  #at = 0;

  constructor(source: string, chunkName: string) {
    this.#lexer = new Lexer(source, chunkName);
    this.#tokens = this.#lexer.tokenize();
  }

  protected get token(): Token {
    return this.#tokens[this.#at] as Token;
  }

  protected peek(offset = 1): Token {
    return this.#tokens[Math.min(this.#at + offset, this.#tokens.length - 1)] as Token;
  }

  protected advance(): Token {
    const token = this.token;
    if (this.#at < this.#tokens.length - 1) this.#at++;
    return token;
  }

  protected is(text: string): boolean {
    const t = this.token;
    return (t.type === "symbol" || t.type === "keyword") && t.text === text;
  }

  protected accept(text: string): boolean {
    if (!this.is(text)) return false;
    this.advance();
    return true;
  }

  protected error(message: string, token: Token = this.token): Error {
    return this.#lexer.error(message, token.raw ?? token.text, token.line);
  }

  protected expected(what: string): Error {
    return this.error(`'${what}' expected`);
  }

  protected expect(text: string): void {
    if (!this.accept(text)) throw this.expected(text);
  }

  /** check_match: a closing token, naming the opening one when it is on an earlier line. */
  protected expectClosing(what: string, who: string, line: number): void {
    if (this.accept(what)) return;
    if (line === this.token.line) throw this.expected(what);
    throw this.error(`'${what}' expected (to close '${who}' at line ${line})`);
  }

  protected name(): string {
    const t = this.token;
    if (t.type !== "name") throw this.error("<name> expected");
    this.advance();
    return t.text;
  }

  /** The token before the current one (undefined at the start). */
  protected previousToken(): Token | undefined {
    return this.#tokens[this.#at - 1];
  }
}
