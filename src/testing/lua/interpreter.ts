/**
 * A tree-walking evaluator for the syntax tree of parser.ts, with Lua 5.1 semantics: doubles
 * with string coercion, truthiness, multiple results, closures over per-iteration locals,
 * metatables with __index and __newindex, and Lua's runtime error messages ("attempt to index
 * local 't' (a nil value)") prefixed with "chunk:line:".
 */
import type { Block, Expr, FunctionProto, Stmt, Target } from "./ast.js";
import { LuaError } from "./errors.js";
import { parse } from "./parser.js";
import { LuaFunction, LuaTable, toArith, tostring, truthy, typeOf, type LuaRuntime, type LuaValue } from "./values.js";

interface Cell {
  v: LuaValue;
}

interface Frame {
  readonly cells: (Cell | undefined)[];
  readonly upvalues: readonly Cell[];
  readonly varargs: readonly LuaValue[];
  line: number;
}

const BREAK = Symbol("break");
type Flow = undefined | typeof BREAK | LuaValue[];

/** Raised when a script exceeds its step budget; pcall does not catch it. */
export class ScriptKilledError extends Error {
  constructor(steps: number) {
    super(`script stopped after ${steps} steps (MemoryRedis's guard against endless loops)`);
    this.name = "ScriptKilledError";
  }
}

/** A table whose writes fail, as Redis 7 makes its globals and libraries. */
export const READONLY = new WeakSet<LuaTable>();

export interface InterpreterOptions {
  /** Name used in error positions ("user_script" in Redis). */
  readonly chunkName: string;
  /** Loop iterations plus calls one `run` may take before it is stopped. */
  readonly stepLimit?: number;
  /** Deepest nesting of Lua calls ("stack overflow" beyond). */
  readonly maxDepth?: number;
}

export class Interpreter implements LuaRuntime {
  readonly globals = new LuaTable();
  /** The metatable every string shares (its __index is the string library). */
  stringMeta: LuaTable | undefined;
  readonly #chunk: string;
  readonly #stepLimit: number;
  readonly #maxDepth: number;
  readonly #frames: Frame[] = [];
  #steps = 0;

  constructor(options: InterpreterOptions) {
    this.#chunk = options.chunkName;
    this.#stepLimit = options.stepLimit ?? 50_000_000;
    this.#maxDepth = options.maxDepth ?? 180;
  }

  /** Compiles `source` into a function (the main chunk); throws LuaError on a syntax error. */
  load(source: string): LuaFunction {
    const proto = parse(source, this.#chunk);
    return this.#closure(proto, []);
  }

  /** Runs a function from outside any Lua code, with a fresh step budget. */
  run(fn: LuaFunction, args: LuaValue[] = []): LuaValue[] {
    this.#steps = 0;
    return this.call(fn, args);
  }

  call(fn: LuaValue, args: LuaValue[]): LuaValue[] {
    return this.#callValue(fn, args, undefined);
  }

  where(level: number): string {
    const frame = this.#frames[this.#frames.length - level];
    return frame ? `${this.#chunk}:${frame.line}:` : "";
  }

  lessThan(a: LuaValue, b: LuaValue): boolean {
    return this.#less(a, b, false);
  }

  /** A runtime error at the running Lua line, as luaG_runerror phrases it. */
  error(message: string): LuaError {
    const frame = this.#frames[this.#frames.length - 1];
    const error = new LuaError(`${this.where(1)} ${message}`.trimStart(), frame?.line);
    return error;
  }

  // ---------------------------------------------------------------------------------------------
  // Functions

  #closure(proto: FunctionProto, upvalues: readonly Cell[]): LuaFunction {
    return new LuaFunction(proto.name, (args) => this.#invoke(proto, upvalues, args));
  }

  #invoke(proto: FunctionProto, upvalues: readonly Cell[], args: readonly LuaValue[]): LuaValue[] {
    if (this.#frames.length >= this.#maxDepth) throw this.error("stack overflow");
    this.#step();
    const cells: (Cell | undefined)[] = new Array<Cell | undefined>(proto.slotCount);
    proto.params.forEach((slot, i) => { cells[slot] = { v: args[i] }; });
    const varargs = proto.isVararg ? args.slice(proto.params.length) : [];
    const frame: Frame = { cells, upvalues, varargs, line: proto.line };
    this.#frames.push(frame);
    try {
      const flow = this.#block(proto.body, frame);
      return Array.isArray(flow) ? flow : [];
    } catch (error) {
      // The innermost Lua function an error passes through is where Redis says it happened.
      if (error instanceof LuaError && error.line === undefined) error.line = frame.line;
      throw error;
    } finally {
      this.#frames.pop();
    }
  }

  #callValue(fn: LuaValue, args: LuaValue[], expr: Expr | undefined): LuaValue[] {
    if (fn instanceof LuaFunction) return fn.call(args, this);
    throw this.error(`attempt to call ${describe(expr, fn)}`);
  }

  #step(): void {
    if (++this.#steps > this.#stepLimit) throw new ScriptKilledError(this.#stepLimit);
  }

  // ---------------------------------------------------------------------------------------------
  // Statements

  #block(block: Block, frame: Frame): Flow {
    for (const stmt of block) {
      const flow = this.#stmt(stmt, frame);
      if (flow !== undefined) return flow;
    }
    return undefined;
  }

  #stmt(s: Stmt, frame: Frame): Flow {
    frame.line = s.line;
    switch (s.k) {
      case "local": {
        const values = this.#list(s.values, frame);
        s.slots.forEach((slot, i) => { frame.cells[slot] = { v: values[i] }; });
        return undefined;
      }
      case "localFunction": {
        const cell: Cell = { v: undefined };
        frame.cells[s.slot] = cell;
        cell.v = this.#makeClosure(s.proto, frame);
        return undefined;
      }
      case "assign": return this.#assign(s.targets, s.values, frame);
      case "call": this.#multi(s.call, frame); return undefined;
      case "do": return this.#block(s.body, frame);
      case "while":
        while (truthy(this.#expr(s.cond, frame))) {
          this.#step();
          const flow = this.#block(s.body, frame);
          if (flow === BREAK) break;
          if (flow !== undefined) return flow;
        }
        return undefined;
      case "repeat":
        for (;;) {
          this.#step();
          const flow = this.#block(s.body, frame);
          if (flow === BREAK) break;
          if (flow !== undefined) return flow;
          if (truthy(this.#expr(s.cond, frame))) break;
        }
        return undefined;
      case "if":
        for (const clause of s.clauses) {
          if (truthy(this.#expr(clause.cond, frame))) return this.#block(clause.body, frame);
        }
        return s.orElse ? this.#block(s.orElse, frame) : undefined;
      case "forNum": return this.#forNum(s, frame);
      case "forIn": return this.#forIn(s, frame);
      case "return": {
        // A lone call in return position passes all its results on.
        return this.#list(s.values, frame);
      }
      case "break": return BREAK;
    }
  }

  #assign(targets: readonly Target[], values: readonly Expr[], frame: Frame): Flow {
    if (targets.length === 1 && values.length === 1) {
      const target = targets[0] as Target;
      if (target.k === "index") {
        const object = this.#expr(target.object, frame);
        const key = this.#expr(target.key, frame);
        this.#setIndex(object, key, this.#expr(values[0] as Expr, frame), target);
      } else {
        this.#store(target, this.#expr(values[0] as Expr, frame), frame);
      }
      return undefined;
    }
    // Lua evaluates every table and key on the left, then every value, then assigns.
    const places = targets.map((t) => (t.k === "index" ? { object: this.#expr(t.object, frame), key: this.#expr(t.key, frame) } : undefined));
    const list = this.#list(values, frame);
    for (let i = targets.length - 1; i >= 0; i--) {
      const target = targets[i] as Target;
      const place = places[i];
      if (place) this.#setIndex(place.object, place.key, list[i], target);
      else this.#store(target, list[i], frame);
    }
    return undefined;
  }

  #store(target: Target, value: LuaValue, frame: Frame): void {
    switch (target.k) {
      case "local": (frame.cells[target.slot] as Cell).v = value; return;
      case "upvalue": (frame.upvalues[target.index] as Cell).v = value; return;
      case "global": this.#setIndex(this.globals, target.name, value, target); return;
      default: throw new Error("unreachable");
    }
  }

  #forNum(s: Extract<Stmt, { k: "forNum" }>, frame: Frame): Flow {
    const start = toArith(this.#expr(s.start, frame));
    if (start === undefined) throw this.error("'for' initial value must be a number");
    const limit = toArith(this.#expr(s.limit, frame));
    if (limit === undefined) throw this.error("'for' limit must be a number");
    const step = s.step ? toArith(this.#expr(s.step, frame)) : 1;
    if (step === undefined) throw this.error("'for' step must be a number");
    for (let i = start; step > 0 ? i <= limit : i >= limit; i += step) {
      this.#step();
      frame.cells[s.slot] = { v: i };
      const flow = this.#block(s.body, frame);
      if (flow === BREAK) break;
      if (flow !== undefined) return flow;
    }
    return undefined;
  }

  #forIn(s: Extract<Stmt, { k: "forIn" }>, frame: Frame): Flow {
    const [fn, state, initial] = this.#list(s.values, frame);
    let control = initial;
    for (;;) {
      this.#step();
      frame.line = s.line;
      const results = this.#callValue(fn, [state, control], undefined);
      if (results[0] === undefined) break;
      control = results[0];
      s.slots.forEach((slot, i) => { frame.cells[slot] = { v: results[i] }; });
      const flow = this.#block(s.body, frame);
      if (flow === BREAK) break;
      if (flow !== undefined) return flow;
    }
    return undefined;
  }

  // ---------------------------------------------------------------------------------------------
  // Expressions

  /** Values of an expression list: each one value, except that the last passes on all of its. */
  #list(exprs: readonly Expr[], frame: Frame): LuaValue[] {
    if (exprs.length === 0) return [];
    const out: LuaValue[] = [];
    for (let i = 0; i < exprs.length - 1; i++) out.push(this.#expr(exprs[i] as Expr, frame));
    const last = exprs[exprs.length - 1] as Expr;
    if (last.k === "call" || last.k === "method" || last.k === "vararg") out.push(...this.#multi(last, frame));
    else out.push(this.#expr(last, frame));
    return out;
  }

  /** All results of a call or `...`. */
  #multi(e: Expr, frame: Frame): LuaValue[] {
    switch (e.k) {
      case "vararg": return frame.varargs.slice();
      case "call": {
        const fn = this.#expr(e.fn, frame);
        const args = this.#list(e.args, frame);
        frame.line = e.line;
        return this.#callValue(fn, args, e.fn);
      }
      case "method": {
        const object = this.#expr(e.object, frame);
        const fn = this.#index(object, e.name, e.object);
        const args = this.#list(e.args, frame);
        frame.line = e.line;
        if (!(fn instanceof LuaFunction)) throw this.error(`attempt to call method '${e.name}' (a ${typeOf(fn)} value)`);
        args.unshift(object);
        return fn.call(args, this);
      }
      default: return [this.#expr(e, frame)];
    }
  }

  #expr(e: Expr, frame: Frame): LuaValue {
    switch (e.k) {
      case "nil": return undefined;
      case "true": return true;
      case "false": return false;
      case "number": return e.value;
      case "string": return e.value;
      case "vararg": return frame.varargs[0];
      case "function": return this.#makeClosure(e.proto, frame);
      case "local": return (frame.cells[e.slot] as Cell).v;
      case "upvalue": return (frame.upvalues[e.index] as Cell).v;
      case "global": return this.#index(this.globals, e.name, e);
      case "index": {
        const object = this.#expr(e.object, frame);
        return this.#index(object, this.#expr(e.key, frame), e.object);
      }
      case "call": case "method": return this.#multi(e, frame)[0];
      case "paren": return this.#expr(e.inner, frame);
      case "table": return this.#table(e, frame);
      case "unary": return this.#unary(e, frame);
      case "binary": return this.#binary(e, frame);
    }
  }

  #makeClosure(proto: FunctionProto, frame: Frame): LuaFunction {
    const upvalues = proto.upvalues.map((u) => (u.fromParentLocal ? (frame.cells[u.index] as Cell) : (frame.upvalues[u.index] as Cell)));
    return this.#closure(proto, upvalues);
  }

  #table(e: Extract<Expr, { k: "table" }>, frame: Frame): LuaTable {
    const t = new LuaTable();
    let n = 1;
    e.items.forEach((item, i) => {
      if (item.kind === "keyed") {
        const key = this.#expr(item.key, frame);
        this.#checkKey(key);
        t.set(key as NonNullable<LuaValue>, this.#expr(item.value, frame));
        return;
      }
      const last = i === e.items.length - 1;
      const v = item.value;
      if (last && (v.k === "call" || v.k === "method" || v.k === "vararg")) {
        for (const value of this.#multi(v, frame)) t.set(n++, value);
      } else {
        t.set(n++, this.#expr(v, frame));
      }
    });
    return t;
  }

  #unary(e: Extract<Expr, { k: "unary" }>, frame: Frame): LuaValue {
    const v = this.#expr(e.operand, frame);
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

  #binary(e: Extract<Expr, { k: "binary" }>, frame: Frame): LuaValue {
    if (e.op === "and") {
      const a = this.#expr(e.left, frame);
      return truthy(a) ? this.#expr(e.right, frame) : a;
    }
    if (e.op === "or") {
      const a = this.#expr(e.left, frame);
      return truthy(a) ? a : this.#expr(e.right, frame);
    }
    const a = this.#expr(e.left, frame);
    const b = this.#expr(e.right, frame);
    frame.line = e.line;
    switch (e.op) {
      case "==": return a === b;
      case "~=": return a !== b;
      case "<": return this.#less(a, b, false);
      case "<=": return this.#less(a, b, true);
      case ">": return this.#less(b, a, false);
      case ">=": return this.#less(b, a, true);
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

  #less(a: LuaValue, b: LuaValue, orEqual: boolean): boolean {
    if ((typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string")) {
      return orEqual ? a <= b : a < b;
    }
    const ta = typeOf(a);
    const tb = typeOf(b);
    throw this.error(ta === tb ? `attempt to compare two ${ta} values` : `attempt to compare ${ta} with ${tb}`);
  }

  // ---------------------------------------------------------------------------------------------
  // Indexing

  #index(object: LuaValue, key: LuaValue, expr: Expr | undefined): LuaValue {
    if (object instanceof LuaTable) {
      const value = object.get(key);
      if (value !== undefined || !object.metatable) return value;
      const handler = object.metatable.get("__index");
      if (handler === undefined) return undefined;
      if (handler instanceof LuaFunction) return handler.call([object, key], this)[0];
      return this.#index(handler, key, undefined);
    }
    if (typeof object === "string" && this.stringMeta) {
      const lib = this.stringMeta.get("__index");
      return lib instanceof LuaTable ? lib.get(key) : undefined;
    }
    throw this.error(`attempt to index ${describe(expr, object)}`);
  }

  #setIndex(object: LuaValue, key: LuaValue, value: LuaValue, target: Target): void {
    if (!(object instanceof LuaTable)) {
      throw this.error(`attempt to index ${describe(target.k === "index" ? target.object : undefined, object)}`);
    }
    if (READONLY.has(object)) throw this.error("Attempt to modify a readonly table");
    if (object.metatable && object.get(key) === undefined) {
      const handler = object.metatable.get("__newindex");
      if (handler instanceof LuaFunction) { handler.call([object, key, value], this); return; }
      if (handler instanceof LuaTable) { this.#setIndex(handler, key, value, target); return; }
    }
    this.#checkKey(key);
    object.set(key as NonNullable<LuaValue>, value);
  }

  #checkKey(key: LuaValue): void {
    if (key === undefined) throw this.error("table index is nil");
    if (typeof key === "number" && Number.isNaN(key)) throw this.error("table index is NaN");
  }
}

/** How Lua 5.1 names a value in an error: "local 'x' (a nil value)", or just "a nil value". */
function describe(expr: Expr | undefined, value: LuaValue): string {
  const type = `a ${typeOf(value)} value`;
  if (!expr) return type;
  switch (expr.k) {
    case "local": return `local '${expr.name}' (${type})`;
    case "upvalue": return `upvalue '${expr.name}' (${type})`;
    case "global": return `global '${expr.name}' (${type})`;
    case "index": return `field '${expr.key.k === "string" ? expr.key.value : "?"}' (${type})`;
    case "method": return `method '${expr.name}' (${type})`;
    default: return type;
  }
}
