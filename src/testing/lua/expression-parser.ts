/**
 * Lua 5.1 expressions: operators by lparser.c's priorities, names resolved to locals, upvalues or
 * globals, calls, indexing and table constructors. Function bodies are statements: the statement
 * parser that extends this class supplies them.
 */
import type { BinaryOp, Expr, FunctionProto, Target, TableItem, UnaryOp } from "./ast.js";
import { FunctionScope } from "./function-scope.js";
import { TokenCursor } from "./token-cursor.js";

/** Left and right binding power of each binary operator (lparser.c's priority table). */
const BINARY: Record<string, [number, number]> = {
  "+": [6, 6], "-": [6, 6], "*": [7, 7], "/": [7, 7], "%": [7, 7],
  "^": [10, 9], "..": [5, 4],
  "==": [3, 3], "~=": [3, 3], "<": [3, 3], "<=": [3, 3], ">": [3, 3], ">=": [3, 3],
  and: [2, 2], or: [1, 1],
};
const UNARY_PRIORITY = 8;

/** Parses expressions within the function being read (`fn`). */
export abstract class ExpressionParser extends TokenCursor {
  /** The function being read; a function body swaps in its own while it is read. */
  protected fn = new FunctionScope(undefined, true);

  /** A function's parameters and body, up to its `end`. */
  protected abstract functionBody(name: string, line: number, method: boolean): FunctionProto;

  protected resolve(name: string, line: number): Target {
    const slot = this.fn.findLocal(name);
    if (slot !== undefined) return { k: "local", slot, name, line };
    const up = this.fn.findUpvalue(name);
    if (up !== undefined) return { k: "upvalue", index: up, name, line };
    return { k: "global", name, line };
  }

  protected exprList(): Expr[] {
    const out = [this.expr()];
    while (this.accept(",")) out.push(this.expr());
    return out;
  }

  protected expr(limit = 0): Expr {
    const t = this.token;
    let left: Expr;
    const unary = (t.type === "keyword" && t.text === "not") || (t.type === "symbol" && (t.text === "-" || t.text === "#"));
    if (unary) {
      this.advance();
      const operand = this.expr(UNARY_PRIORITY);
      left = foldUnary(t.text as UnaryOp, operand, t.line);
    } else {
      left = this.simpleExpr();
    }
    for (;;) {
      const op = this.token;
      const power = (op.type === "symbol" || op.type === "keyword") ? BINARY[op.text] : undefined;
      if (!power || power[0] <= limit) return left;
      this.advance();
      const right = this.expr(power[1]);
      left = { k: "binary", op: op.text as BinaryOp, left, right, line: op.line };
    }
  }

  private simpleExpr(): Expr {
    const t = this.token;
    const line = t.line;
    if (t.type === "number") { this.advance(); return { k: "number", value: t.value as number, line }; }
    if (t.type === "string") { this.advance(); return { k: "string", value: t.text, line }; }
    if (t.type === "keyword") {
      switch (t.text) {
        case "nil": this.advance(); return { k: "nil", line };
        case "true": this.advance(); return { k: "true", line };
        case "false": this.advance(); return { k: "false", line };
        case "function": this.advance(); return { k: "function", proto: this.functionBody("anonymous", line, false), line };
        default: break;
      }
    }
    if (t.type === "symbol") {
      if (t.text === "...") {
        if (!this.fn.isVararg) throw this.error("cannot use '...' outside a vararg function");
        this.advance();
        return { k: "vararg", line };
      }
      if (t.text === "{") return this.table();
    }
    return this.suffixedExpr();
  }

  private primaryExpr(): Expr {
    const t = this.token;
    if (t.type === "name") {
      this.advance();
      return this.resolve(t.text, t.line);
    }
    if (this.is("(")) {
      const line = t.line;
      this.advance();
      const inner = this.expr();
      this.expectClosing(")", "(", line);
      return { k: "paren", inner, line };
    }
    throw this.error("unexpected symbol");
  }

  protected suffixedExpr(): Expr {
    let e = this.primaryExpr();
    for (;;) {
      const t = this.token;
      if (t.type === "symbol" && t.text === ".") {
        this.advance();
        const key = this.name();
        e = { k: "index", object: e, key: { k: "string", value: key, line: t.line }, line: t.line };
      } else if (t.type === "symbol" && t.text === "[") {
        this.advance();
        const key = this.expr();
        this.expect("]");
        e = { k: "index", object: e, key, line: t.line };
      } else if (t.type === "symbol" && t.text === ":") {
        this.advance();
        const name = this.name();
        e = { k: "method", object: e, name, args: this.callArgs(), line: t.line };
      } else if ((t.type === "symbol" && (t.text === "(" || t.text === "{")) || t.type === "string") {
        e = { k: "call", fn: e, args: this.callArgs(), line: e.line };
      } else {
        return e;
      }
    }
  }

  private callArgs(): Expr[] {
    const t = this.token;
    if (t.type === "string") { this.advance(); return [{ k: "string", value: t.text, line: t.line }]; }
    if (this.is("{")) return [this.table()];
    if (!this.is("(")) throw this.error("function arguments expected");
    const previous = this.previousToken();
    if (previous && previous.line !== t.line) throw this.error("ambiguous syntax (function call x new statement)");
    this.advance();
    const args = this.is(")") ? [] : this.exprList();
    this.expectClosing(")", "(", t.line);
    return args;
  }

  private table(): Expr {
    const line = this.token.line;
    this.expect("{");
    const items: TableItem[] = [];
    while (!this.is("}")) {
      if (this.token.type === "name" && this.peek().type === "symbol" && this.peek().text === "=") {
        const key = this.name();
        this.advance();
        items.push({ kind: "keyed", key: { k: "string", value: key, line }, value: this.expr() });
      } else if (this.is("[")) {
        this.advance();
        const key = this.expr();
        this.expect("]");
        this.expect("=");
        items.push({ kind: "keyed", key, value: this.expr() });
      } else {
        items.push({ kind: "positional", value: this.expr() });
      }
      if (!this.accept(",") && !this.accept(";")) break;
    }
    this.expectClosing("}", "{", line);
    return { k: "table", items, line };
  }
}

/** Lua folds `-<number>` at compile time; keeping that makes `-1` a plain constant. */
function foldUnary(op: UnaryOp, operand: Expr, line: number): Expr {
  if (op === "-" && operand.k === "number") return { k: "number", value: -operand.value, line };
  return { k: "unary", op, operand, line };
}
