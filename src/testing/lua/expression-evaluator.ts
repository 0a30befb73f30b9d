/** Lua 5.1 expressions evaluated: multiple results, closures, table constructors, operators with string coercion. */
import type { Expr, FunctionProto } from "./ast.js";
import { CallStack, describe, type Cell, type Frame } from "./call-stack.js";
import { LuaFunction, LuaTable, toArith, tostring, truthy, typeOf, type LuaValue } from "./values.js";

/** Evaluates expressions on the call stack; the Interpreter adds statements. */
export abstract class ExpressionEvaluator extends CallStack {
  /** Values of an expression list: each one value, except that the last passes on all of its. */
  protected list(exprs: readonly Expr[], frame: Frame): LuaValue[] {
    if (exprs.length === 0) return [];
    const out: LuaValue[] = [];
    for (let i = 0; i < exprs.length - 1; i++) out.push(this.expr(exprs[i] as Expr, frame));
    const last = exprs[exprs.length - 1] as Expr;
    if (last.k === "call" || last.k === "method" || last.k === "vararg") out.push(...this.multi(last, frame));
    else out.push(this.expr(last, frame));
    return out;
  }

  /** All results of a call or `...`. */
  protected multi(e: Expr, frame: Frame): LuaValue[] {
    switch (e.k) {
      case "vararg": return frame.varargs.slice();
      case "call": {
        const fn = this.expr(e.fn, frame);
        const args = this.list(e.args, frame);
        frame.line = e.line;
        return this.callValue(fn, args, e.fn);
      }
      case "method": {
        const object = this.expr(e.object, frame);
        const fn = this.index(object, e.name, e.object);
        const args = this.list(e.args, frame);
        frame.line = e.line;
        if (!(fn instanceof LuaFunction)) throw this.error(`attempt to call method '${e.name}' (a ${typeOf(fn)} value)`);
        args.unshift(object);
        return fn.call(args, this);
      }
      default: return [this.expr(e, frame)];
    }
  }

  protected expr(e: Expr, frame: Frame): LuaValue {
    switch (e.k) {
      case "nil": return undefined;
      case "true": return true;
      case "false": return false;
      case "number": return e.value;
      case "string": return e.value;
      case "vararg": return frame.varargs[0];
      case "function": return this.makeClosure(e.proto, frame);
      case "local": return (frame.cells[e.slot] as Cell).v;
      case "upvalue": return (frame.upvalues[e.index] as Cell).v;
      case "global": return this.index(this.globals, e.name, e);
      case "index": {
        const object = this.expr(e.object, frame);
        return this.index(object, this.expr(e.key, frame), e.object);
      }
      case "call": case "method": return this.multi(e, frame)[0];
      case "paren": return this.expr(e.inner, frame);
      case "table": return this.table(e, frame);
      case "unary": return this.unary(e, frame);
      case "binary": return this.binary(e, frame);
    }
  }

  protected makeClosure(proto: FunctionProto, frame: Frame): LuaFunction {
    const upvalues = proto.upvalues.map((u) => (u.fromParentLocal ? (frame.cells[u.index] as Cell) : (frame.upvalues[u.index] as Cell)));
    return this.closure(proto, upvalues);
  }

  private table(e: Extract<Expr, { k: "table" }>, frame: Frame): LuaTable {
    const t = new LuaTable();
    let n = 1;
    e.items.forEach((item, i) => {
      if (item.kind === "keyed") {
        const key = this.expr(item.key, frame);
        this.checkKey(key);
        t.set(key as NonNullable<LuaValue>, this.expr(item.value, frame));
        return;
      }
      const last = i === e.items.length - 1;
      const v = item.value;
      if (last && (v.k === "call" || v.k === "method" || v.k === "vararg")) {
        for (const value of this.multi(v, frame)) t.set(n++, value);
      } else {
        t.set(n++, this.expr(v, frame));
      }
    });
    return t;
  }

  private unary(e: Extract<Expr, { k: "unary" }>, frame: Frame): LuaValue {
    const v = this.expr(e.operand, frame);
    frame.line = e.line;
    switch (e.op) {
      case "not": return !truthy(v);
      case "-": {
        const n = toArith(v);
        if (n === undefined) throw this.error(`attempt to perform arithmetic on ${describe(e.operand, v)}`);
        return -n;
      }
      case "#": {
        if (typeof v === "string") return v.length;
        if (v instanceof LuaTable) return v.length();
        throw this.error(`attempt to get length of ${describe(e.operand, v)}`);
      }
    }
  }

  private binary(e: Extract<Expr, { k: "binary" }>, frame: Frame): LuaValue {
    if (e.op === "and") {
      const a = this.expr(e.left, frame);
      return truthy(a) ? this.expr(e.right, frame) : a;
    }
    if (e.op === "or") {
      const a = this.expr(e.left, frame);
      return truthy(a) ? a : this.expr(e.right, frame);
    }
    const a = this.expr(e.left, frame);
    const b = this.expr(e.right, frame);
    frame.line = e.line;
    switch (e.op) {
      case "==": return a === b;
      case "~=": return a !== b;
      case "<": return this.less(a, b, false);
      case "<=": return this.less(a, b, true);
      case ">": return this.less(b, a, false);
      case ">=": return this.less(b, a, true);
      case "..": {
        if ((typeof a === "string" || typeof a === "number") && (typeof b === "string" || typeof b === "number")) {
          return tostring(a) + tostring(b);
        }
        const bad = typeof a === "string" || typeof a === "number" ? [e.right, b] as const : [e.left, a] as const;
        throw this.error(`attempt to concatenate ${describe(bad[0], bad[1])}`);
      }
      default: {
        const x = toArith(a);
        const y = toArith(b);
        if (x === undefined || y === undefined) {
          const bad = x === undefined ? [e.left, a] as const : [e.right, b] as const;
          throw this.error(`attempt to perform arithmetic on ${describe(bad[0], bad[1])}`);
        }
        switch (e.op) {
          case "+": return x + y;
          case "-": return x - y;
          case "*": return x * y;
          case "/": return x / y;
          case "%": return x - Math.floor(x / y) * y;
          case "^": return Math.pow(x, y);
        }
      }
    }
    throw new Error(`unknown operator ${e.op}`);
  }
}
