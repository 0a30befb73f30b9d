/**
 * Lua 5.1 parser: tokens to a syntax tree with names resolved to locals, upvalues and globals.
 * This file reads statements and blocks; expression-parser.ts reads expressions. Precedences and
 * error messages follow Lua 5.1's lparser.c, because Redis shows a script's compile error to the
 * caller as is.
 */
import type { Block, Expr, FunctionProto, Stmt, Target } from "./ast.js";
import { ExpressionParser } from "./expression-parser.js";
import { FunctionScope } from "./function-scope.js";

/** Reads a chunk: its statements here, its expressions in ExpressionParser. */
export class Parser extends ExpressionParser {
  /** The main chunk, as a vararg function without parameters. */
  parseChunk(): FunctionProto {
    const body = this.block();
    if (this.token.type !== "eof") throw this.expected("<eof>");
    return { name: "main chunk", line: 0, params: [], isVararg: true, body, slotCount: this.fn.slotCount, upvalues: [] };
  }

  private blockEnds(): boolean {
    const t = this.token;
    return t.type === "eof" || (t.type === "keyword" && ["else", "elseif", "end", "until"].includes(t.text));
  }

  private block(): Block {
    this.fn.scopes.push(new Map());
    try {
      return this.statements();
    } finally {
      this.fn.scopes.pop();
    }
  }

  /** Statements up to the end of a block; `return` and `break` must come last. */
  private statements(): Stmt[] {
    const out: Stmt[] = [];
    while (!this.blockEnds()) {
      if (this.is("return") || this.is("break")) {
        out.push(this.lastStatement());
        this.accept(";");
        break;
      }
      out.push(this.statement());
      this.accept(";");
    }
    return out;
  }

  private lastStatement(): Stmt {
    const line = this.token.line;
    if (this.accept("break")) {
      if (this.fn.loopDepth === 0) throw this.error("no loop to break");
      return { k: "break", line };
    }
    this.advance();
    const values = this.blockEnds() || this.is(";") ? [] : this.exprList();
    return { k: "return", values, line };
  }

  private statement(): Stmt {
    const t = this.token;
    const line = t.line;
    if (t.type === "keyword") {
      switch (t.text) {
        case "if": return this.ifStatement(line);
        case "while": {
          this.advance();
          const cond = this.expr();
          this.expect("do");
          const body = this.loopBody();
          this.expectClosing("end", "while", line);
          return { k: "while", cond, body, line };
        }
        case "do": {
          this.advance();
          const body = this.block();
          this.expectClosing("end", "do", line);
          return { k: "do", body, line };
        }
        case "for": return this.forStatement(line);
        case "repeat": {
          this.advance();
          // The condition sees the body's locals, so both share one scope.
          this.fn.scopes.push(new Map());
          this.fn.loopDepth++;
          try {
            const body = this.statements();
            this.expectClosing("until", "repeat", line);
            const cond = this.expr();
            return { k: "repeat", body, cond, line };
          } finally {
            this.fn.loopDepth--;
            this.fn.scopes.pop();
          }
        }
        case "function": return this.functionStatement(line);
        case "local": {
          this.advance();
          if (this.accept("function")) {
            const name = this.name();
            const slot = this.fn.declare(name);
            return { k: "localFunction", slot, proto: this.functionBody(name, line, false), line };
          }
          const names = [this.name()];
          while (this.accept(",")) names.push(this.name());
          const values = this.accept("=") ? this.exprList() : [];
          // Declared after the values, so `local x = x` reads the outer x.
          return { k: "local", slots: names.map((n) => this.fn.declare(n)), values, line };
        }
        default: break;
      }
    }
    return this.expressionStatement(line);
  }

  private loopBody(): Block {
    this.fn.loopDepth++;
    try {
      return this.block();
    } finally {
      this.fn.loopDepth--;
    }
  }

  private ifStatement(line: number): Stmt {
    const clauses: { cond: Expr; body: Block }[] = [];
    this.advance();
    do {
      const cond = this.expr();
      this.expect("then");
      clauses.push({ cond, body: this.block() });
    } while (this.accept("elseif"));
    const orElse = this.accept("else") ? this.block() : undefined;
    this.expectClosing("end", "if", line);
    return { k: "if", clauses, orElse, line };
  }

  private forStatement(line: number): Stmt {
    this.advance();
    const first = this.name();
    if (this.accept("=")) {
      const start = this.expr();
      this.expect(",");
      const limit = this.expr();
      const step = this.accept(",") ? this.expr() : undefined;
      this.expect("do");
      this.fn.scopes.push(new Map());
      try {
        const slot = this.fn.declare(first);
        const body = this.loopBody();
        this.expectClosing("end", "for", line);
        return { k: "forNum", slot, start, limit, step, body, line };
      } finally {
        this.fn.scopes.pop();
      }
    }
    if (!this.is(",") && !this.is("in")) throw this.error("'=' or 'in' expected");
    const names = [first];
    while (this.accept(",")) names.push(this.name());
    this.expect("in");
    const values = this.exprList();
    this.expect("do");
    this.fn.scopes.push(new Map());
    try {
      const slots = names.map((n) => this.fn.declare(n));
      const body = this.loopBody();
      this.expectClosing("end", "for", line);
      return { k: "forIn", slots, values, body, line };
    } finally {
      this.fn.scopes.pop();
    }
  }

  /** `function a.b.c:m() end` is an assignment of a function to a global or a field. */
  private functionStatement(line: number): Stmt {
    this.advance();
    const first = this.name();
    let target: Target = this.resolve(first, line);
    let fullName = first;
    let method = false;
    while (this.is(".") || this.is(":")) {
      method = this.is(":");
      this.advance();
      const key = this.name();
      fullName += (method ? ":" : ".") + key;
      target = { k: "index", object: target, key: { k: "string", value: key, line }, line };
      if (method) break;
    }
    const proto = this.functionBody(fullName, line, method);
    return { k: "assign", targets: [target], values: [{ k: "function", proto, line }], line };
  }

  protected functionBody(name: string, line: number, method: boolean): FunctionProto {
    this.expect("(");
    const params: string[] = method ? ["self"] : [];
    let isVararg = false;
    if (!this.is(")")) {
      do {
        if (this.accept("...")) { isVararg = true; break; }
        params.push(this.name());
      } while (this.accept(","));
    }
    this.expect(")");
    const outer = this.fn;
    const fn = new FunctionScope(outer, isVararg);
    this.fn = fn;
    try {
      const slots = params.map((p) => fn.declare(p));
      const body = this.statements();
      this.expectClosing("end", "function", line);
      return { name, line, params: slots, isVararg, body, slotCount: fn.slotCount, upvalues: fn.upvalues };
    } finally {
      this.fn = outer;
    }
  }

  private expressionStatement(line: number): Stmt {
    const first = this.suffixedExpr();
    if (first.k === "call" || first.k === "method") {
      if (!this.is("=") && !this.is(",")) return { k: "call", call: first, line };
    }
    const targets: Target[] = [this.assignable(first)];
    while (this.accept(",")) targets.push(this.assignable(this.suffixedExpr()));
    this.expect("=");
    return { k: "assign", targets, values: this.exprList(), line };
  }

  private assignable(e: Expr): Target {
    if (e.k === "local" || e.k === "upvalue" || e.k === "global" || e.k === "index") return e;
    throw this.error("syntax error");
  }
}

/** Parses a whole chunk; throws LuaError with Lua's message on a syntax error. */
export function parse(source: string, chunkName: string): FunctionProto {
  return new Parser(source, chunkName).parseChunk();
}
