/**
 * Lua 5.1 parser: tokens to a syntax tree with names resolved to locals, upvalues and globals.
 * Precedences and error messages follow Lua 5.1's lparser.c, because Redis shows a script's
 * compile error to the caller as is.
 */
import type { BinaryOp, Block, Expr, FunctionProto, Stmt, Target, TableItem, UnaryOp, UpvalueSource } from "./ast.js";
import { Lexer, type Token } from "./lexer.js";

/** Left and right binding power of each binary operator (lparser.c's priority table). */
const BINARY: Record<string, [number, number]> = {
  "+": [6, 6], "-": [6, 6], "*": [7, 7], "/": [7, 7], "%": [7, 7],
  "^": [10, 9], "..": [5, 4],
  "==": [3, 3], "~=": [3, 3], "<": [3, 3], "<=": [3, 3], ">": [3, 3], ">=": [3, 3],
  and: [2, 2], or: [1, 1],
};
const UNARY_PRIORITY = 8;

/** One function being parsed: its scopes of locals and the upvalues its body uses. */
class FunctionScope {
  readonly parent: FunctionScope | undefined;
  readonly isVararg: boolean;
  /** Innermost scope last; each maps a name to its slot (later declarations shadow earlier ones). */
  readonly scopes: Map<string, number>[] = [new Map()];
  readonly upvalues: UpvalueSource[] = [];
  readonly upvalueNames = new Map<string, number>();
  slotCount = 0;
  loopDepth = 0;

  constructor(parent: FunctionScope | undefined, isVararg: boolean) {
    this.parent = parent;
    this.isVararg = isVararg;
  }

  declare(name: string): number {
    const slot = this.slotCount++;
    (this.scopes[this.scopes.length - 1] as Map<string, number>).set(name, slot);
    return slot;
  }

  findLocal(name: string): number | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const slot = this.scopes[i]?.get(name);
      if (slot !== undefined) return slot;
    }
    return undefined;
  }

  findUpvalue(name: string): number | undefined {
    const known = this.upvalueNames.get(name);
    if (known !== undefined) return known;
    if (!this.parent) return undefined;
    const local = this.parent.findLocal(name);
    let source: UpvalueSource | undefined;
    if (local !== undefined) source = { fromParentLocal: true, index: local };
    else {
      const up = this.parent.findUpvalue(name);
      if (up !== undefined) source = { fromParentLocal: false, index: up };
    }
    if (!source) return undefined;
    this.upvalues.push(source);
    this.upvalueNames.set(name, this.upvalues.length - 1);
    return this.upvalues.length - 1;
  }
}

export class Parser {
  readonly #lexer: Lexer;
  readonly #tokens: Token[];
  #at = 0;
  #fn: FunctionScope;

  constructor(source: string, chunkName: string) {
    this.#lexer = new Lexer(source, chunkName);
    this.#tokens = this.#lexer.tokenize();
    this.#fn = new FunctionScope(undefined, true);
  }

  /** The main chunk, as a vararg function without parameters. */
  parseChunk(): FunctionProto {
    const body = this.#block();
    if (this.#token.type !== "eof") throw this.#expected("<eof>");
    return { name: "main chunk", line: 0, params: [], isVararg: true, body, slotCount: this.#fn.slotCount, upvalues: [] };
  }

  get #token(): Token {
    return this.#tokens[this.#at] as Token;
  }

  #peek(offset = 1): Token {
    return this.#tokens[Math.min(this.#at + offset, this.#tokens.length - 1)] as Token;
  }

  #advance(): Token {
    const token = this.#token;
    if (this.#at < this.#tokens.length - 1) this.#at++;
    return token;
  }

  #is(text: string): boolean {
    const t = this.#token;
    return (t.type === "symbol" || t.type === "keyword") && t.text === text;
  }

  #accept(text: string): boolean {
    if (!this.#is(text)) return false;
    this.#advance();
    return true;
  }

  #error(message: string, token: Token = this.#token): Error {
    return this.#lexer.error(message, token.raw ?? token.text, token.line);
  }

  #expected(what: string): Error {
    return this.#error(`'${what}' expected`);
  }

  #expect(text: string): void {
    if (!this.#accept(text)) throw this.#expected(text);
  }

  /** check_match: a closing token, naming the opening one when it is on an earlier line. */
  #expectClosing(what: string, who: string, line: number): void {
    if (this.#accept(what)) return;
    if (line === this.#token.line) throw this.#expected(what);
    throw this.#error(`'${what}' expected (to close '${who}' at line ${line})`);
  }

  #name(): string {
    const t = this.#token;
    if (t.type !== "name") throw this.#error("<name> expected");
    this.#advance();
    return t.text;
  }

  #blockEnds(): boolean {
    const t = this.#token;
    return t.type === "eof" || (t.type === "keyword" && ["else", "elseif", "end", "until"].includes(t.text));
  }

  #block(): Block {
    this.#fn.scopes.push(new Map());
    try {
      return this.#statements();
    } finally {
      this.#fn.scopes.pop();
    }
  }

  /** Statements up to the end of a block; `return` and `break` must come last. */
  #statements(): Stmt[] {
    const out: Stmt[] = [];
    while (!this.#blockEnds()) {
      if (this.#is("return") || this.#is("break")) {
        out.push(this.#lastStatement());
        this.#accept(";");
        break;
      }
      out.push(this.#statement());
      this.#accept(";");
    }
    return out;
  }

  #lastStatement(): Stmt {
    const line = this.#token.line;
    if (this.#accept("break")) {
      if (this.#fn.loopDepth === 0) throw this.#error("no loop to break");
      return { k: "break", line };
    }
    this.#advance();
    const values = this.#blockEnds() || this.#is(";") ? [] : this.#exprList();
    return { k: "return", values, line };
  }

  #statement(): Stmt {
    const t = this.#token;
    const line = t.line;
    if (t.type === "keyword") {
      switch (t.text) {
        case "if": return this.#if(line);
        case "while": {
          this.#advance();
          const cond = this.#expr();
          this.#expect("do");
          const body = this.#loopBody();
          this.#expectClosing("end", "while", line);
          return { k: "while", cond, body, line };
        }
        case "do": {
          this.#advance();
          const body = this.#block();
          this.#expectClosing("end", "do", line);
          return { k: "do", body, line };
        }
        case "for": return this.#for(line);
        case "repeat": {
          this.#advance();
          // The condition sees the body's locals, so both share one scope.
          this.#fn.scopes.push(new Map());
          this.#fn.loopDepth++;
          try {
            const body = this.#statements();
            this.#expectClosing("until", "repeat", line);
            const cond = this.#expr();
            return { k: "repeat", body, cond, line };
          } finally {
            this.#fn.loopDepth--;
            this.#fn.scopes.pop();
          }
        }
        case "function": return this.#functionStatement(line);
        case "local": {
          this.#advance();
          if (this.#accept("function")) {
            const name = this.#name();
            const slot = this.#fn.declare(name);
            return { k: "localFunction", slot, proto: this.#functionBody(name, line, false), line };
          }
          const names = [this.#name()];
          while (this.#accept(",")) names.push(this.#name());
          const values = this.#accept("=") ? this.#exprList() : [];
          // Declared after the values, so `local x = x` reads the outer x.
          return { k: "local", slots: names.map((n) => this.#fn.declare(n)), values, line };
        }
        default: break;
      }
    }
    return this.#expressionStatement(line);
  }

  #loopBody(): Block {
    this.#fn.loopDepth++;
    try {
      return this.#block();
    } finally {
      this.#fn.loopDepth--;
    }
  }

  #if(line: number): Stmt {
    const clauses: { cond: Expr; body: Block }[] = [];
    this.#advance();
    do {
      const cond = this.#expr();
      this.#expect("then");
      clauses.push({ cond, body: this.#block() });
    } while (this.#accept("elseif"));
    const orElse = this.#accept("else") ? this.#block() : undefined;
    this.#expectClosing("end", "if", line);
    return { k: "if", clauses, orElse, line };
  }

  #for(line: number): Stmt {
    this.#advance();
    const first = this.#name();
    if (this.#accept("=")) {
      const start = this.#expr();
      this.#expect(",");
      const limit = this.#expr();
      const step = this.#accept(",") ? this.#expr() : undefined;
      this.#expect("do");
      this.#fn.scopes.push(new Map());
      try {
        const slot = this.#fn.declare(first);
        const body = this.#loopBody();
        this.#expectClosing("end", "for", line);
        return { k: "forNum", slot, start, limit, step, body, line };
      } finally {
        this.#fn.scopes.pop();
      }
    }
    if (!this.#is(",") && !this.#is("in")) throw this.#error("'=' or 'in' expected");
    const names = [first];
    while (this.#accept(",")) names.push(this.#name());
    this.#expect("in");
    const values = this.#exprList();
    this.#expect("do");
    this.#fn.scopes.push(new Map());
    try {
      const slots = names.map((n) => this.#fn.declare(n));
      const body = this.#loopBody();
      this.#expectClosing("end", "for", line);
      return { k: "forIn", slots, values, body, line };
    } finally {
      this.#fn.scopes.pop();
    }
  }

  /** `function a.b.c:m() end` is an assignment of a function to a global or a field. */
  #functionStatement(line: number): Stmt {
    this.#advance();
    const first = this.#name();
    let target: Target = this.#resolve(first, line);
    let fullName = first;
    let method = false;
    while (this.#is(".") || this.#is(":")) {
      method = this.#is(":");
      this.#advance();
      const key = this.#name();
      fullName += (method ? ":" : ".") + key;
      target = { k: "index", object: target, key: { k: "string", value: key, line }, line };
      if (method) break;
    }
    const proto = this.#functionBody(fullName, line, method);
    return { k: "assign", targets: [target], values: [{ k: "function", proto, line }], line };
  }

  #functionBody(name: string, line: number, method: boolean): FunctionProto {
    this.#expect("(");
    const params: string[] = method ? ["self"] : [];
    let isVararg = false;
    if (!this.#is(")")) {
      do {
        if (this.#accept("...")) { isVararg = true; break; }
        params.push(this.#name());
      } while (this.#accept(","));
    }
    this.#expect(")");
    const outer = this.#fn;
    const fn = new FunctionScope(outer, isVararg);
    this.#fn = fn;
    try {
      const slots = params.map((p) => fn.declare(p));
      const body = this.#statements();
      this.#expectClosing("end", "function", line);
      return { name, line, params: slots, isVararg, body, slotCount: fn.slotCount, upvalues: fn.upvalues };
    } finally {
      this.#fn = outer;
    }
  }

  #expressionStatement(line: number): Stmt {
    const first = this.#suffixedExpr();
    if (first.k === "call" || first.k === "method") {
      if (!this.#is("=") && !this.#is(",")) return { k: "call", call: first, line };
    }
    const targets: Target[] = [this.#assignable(first)];
    while (this.#accept(",")) targets.push(this.#assignable(this.#suffixedExpr()));
    this.#expect("=");
    return { k: "assign", targets, values: this.#exprList(), line };
  }

  #assignable(e: Expr): Target {
    if (e.k === "local" || e.k === "upvalue" || e.k === "global" || e.k === "index") return e;
    throw this.#error("syntax error");
  }

  #resolve(name: string, line: number): Target {
    const slot = this.#fn.findLocal(name);
    if (slot !== undefined) return { k: "local", slot, name, line };
    const up = this.#fn.findUpvalue(name);
    if (up !== undefined) return { k: "upvalue", index: up, name, line };
    return { k: "global", name, line };
  }

  #exprList(): Expr[] {
    const out = [this.#expr()];
    while (this.#accept(",")) out.push(this.#expr());
    return out;
  }

  #expr(limit = 0): Expr {
    const t = this.#token;
    let left: Expr;
    const unary = (t.type === "keyword" && t.text === "not") || (t.type === "symbol" && (t.text === "-" || t.text === "#"));
    if (unary) {
      this.#advance();
      const operand = this.#expr(UNARY_PRIORITY);
      left = foldUnary(t.text as UnaryOp, operand, t.line);
    } else {
      left = this.#simpleExpr();
    }
    for (;;) {
      const op = this.#token;
      const power = (op.type === "symbol" || op.type === "keyword") ? BINARY[op.text] : undefined;
      if (!power || power[0] <= limit) return left;
      this.#advance();
      const right = this.#expr(power[1]);
      left = { k: "binary", op: op.text as BinaryOp, left, right, line: op.line };
    }
  }

  #simpleExpr(): Expr {
    const t = this.#token;
    const line = t.line;
    if (t.type === "number") { this.#advance(); return { k: "number", value: t.value as number, line }; }
    if (t.type === "string") { this.#advance(); return { k: "string", value: t.text, line }; }
    if (t.type === "keyword") {
      switch (t.text) {
        case "nil": this.#advance(); return { k: "nil", line };
        case "true": this.#advance(); return { k: "true", line };
        case "false": this.#advance(); return { k: "false", line };
        case "function": this.#advance(); return { k: "function", proto: this.#functionBody("anonymous", line, false), line };
        default: break;
      }
    }
    if (t.type === "symbol") {
      if (t.text === "...") {
        if (!this.#fn.isVararg) throw this.#error("cannot use '...' outside a vararg function");
        this.#advance();
        return { k: "vararg", line };
      }
      if (t.text === "{") return this.#table();
    }
    return this.#suffixedExpr();
  }

  #primaryExpr(): Expr {
    const t = this.#token;
    if (t.type === "name") {
      this.#advance();
      return this.#resolve(t.text, t.line);
    }
    if (this.#is("(")) {
      const line = t.line;
      this.#advance();
      const inner = this.#expr();
      this.#expectClosing(")", "(", line);
      return { k: "paren", inner, line };
    }
    throw this.#error("unexpected symbol");
  }

  #suffixedExpr(): Expr {
    let e = this.#primaryExpr();
    for (;;) {
      const t = this.#token;
      if (t.type === "symbol" && t.text === ".") {
        this.#advance();
        const key = this.#name();
        e = { k: "index", object: e, key: { k: "string", value: key, line: t.line }, line: t.line };
      } else if (t.type === "symbol" && t.text === "[") {
        this.#advance();
        const key = this.#expr();
        this.#expect("]");
        e = { k: "index", object: e, key, line: t.line };
      } else if (t.type === "symbol" && t.text === ":") {
        this.#advance();
        const name = this.#name();
        e = { k: "method", object: e, name, args: this.#callArgs(), line: t.line };
      } else if ((t.type === "symbol" && (t.text === "(" || t.text === "{")) || t.type === "string") {
        e = { k: "call", fn: e, args: this.#callArgs(), line: e.line };
      } else {
        return e;
      }
    }
  }

  #callArgs(): Expr[] {
    const t = this.#token;
    if (t.type === "string") { this.#advance(); return [{ k: "string", value: t.text, line: t.line }]; }
    if (this.#is("{")) return [this.#table()];
    if (!this.#is("(")) throw this.#error("function arguments expected");
    const previous = this.#tokens[this.#at - 1];
    if (previous && previous.line !== t.line) throw this.#error("ambiguous syntax (function call x new statement)");
    this.#advance();
    const args = this.#is(")") ? [] : this.#exprList();
    this.#expectClosing(")", "(", t.line);
    return args;
  }

  #table(): Expr {
    const line = this.#token.line;
    this.#expect("{");
    const items: TableItem[] = [];
    while (!this.#is("}")) {
      if (this.#token.type === "name" && this.#peek().type === "symbol" && this.#peek().text === "=") {
        const key = this.#name();
        this.#advance();
        items.push({ kind: "keyed", key: { k: "string", value: key, line }, value: this.#expr() });
      } else if (this.#is("[")) {
        this.#advance();
        const key = this.#expr();
        this.#expect("]");
        this.#expect("=");
        items.push({ kind: "keyed", key, value: this.#expr() });
      } else {
        items.push({ kind: "positional", value: this.#expr() });
      }
      if (!this.#accept(",") && !this.#accept(";")) break;
    }
    this.#expectClosing("}", "{", line);
    return { k: "table", items, line };
  }
}

/** Lua folds `-<number>` at compile time; keeping that makes `-1` a plain constant. */
function foldUnary(op: UnaryOp, operand: Expr, line: number): Expr {
  if (op === "-" && operand.k === "number") return { k: "number", value: -operand.value, line };
  return { k: "unary", op, operand, line };
}

/** Parses a whole chunk; throws LuaError with Lua's message on a syntax error. */
export function parse(source: string, chunkName: string): FunctionProto {
  return new Parser(source, chunkName).parseChunk();
}
