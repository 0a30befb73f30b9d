/**
 * What the Lua evaluator runs on: frames of locals, closures and calls, the step budget and the
 * depth limit, indexing with __index and __newindex, and Lua 5.1's runtime error messages
 * ("attempt to index local 't' (a nil value)") prefixed with "chunk:line:".
 */
import type { Block, Expr, FunctionProto, Target } from "./ast.js";
import { LuaError } from "./errors.js";
import { parse } from "./parser.js";
import { LuaFunction, LuaTable, typeOf, type LuaRuntime, type LuaValue } from "./values.js";

/** A local's storage, shared with the closures that capture it. */
export interface Cell {
  v: LuaValue;
}

/** One running Lua function: its locals, upvalues, extra arguments and the line it is on. */
export interface Frame {
  readonly cells: (Cell | undefined)[];
  readonly upvalues: readonly Cell[];
  readonly varargs: readonly LuaValue[];
  line: number;
}

/** What a `break` leaves a block with. */
export const BREAK = Symbol("break");
/** How a block ended: it ran to its end, it broke out of a loop, or it returned these values. */
export type Flow = undefined | typeof BREAK | LuaValue[];

/** Raised when a script exceeds its step budget; pcall does not catch it. */
export class ScriptKilledError extends Error {
  constructor(steps: number) {
    super(`script stopped after ${steps} steps (MemoryRedis's guard against endless loops)`);
    this.name = "ScriptKilledError";
  }
}

/** A table whose writes fail, as Redis 7 makes its globals and libraries. */
export const READONLY = new WeakSet<LuaTable>();

/** Limits and names of one interpreter. */
export interface InterpreterOptions {
  /** Name used in error positions ("user_script" in Redis). */
  readonly chunkName: string;
  /** Loop iterations plus calls one `run` may take before it is stopped. */
  readonly stepLimit?: number;
  /** Deepest nesting of Lua calls ("stack overflow" beyond). */
  readonly maxDepth?: number;
}

/**
 * The runtime under the evaluator: the globals, the stack of Lua frames, the step budget, calls
 * (Lua functions and natives alike), indexing through metatables, `<`, and runtime errors.
 */
export abstract class CallStack implements LuaRuntime {
  readonly globals = new LuaTable();
  /** The metatable every string shares (its __index is the string library). */
  stringMeta: LuaTable | undefined;
  readonly #chunk: string;
  readonly #stepLimit: number;
  readonly #maxDepth: number;
  readonly #frames: Frame[] = [];
  #steps = 0;

  /** Runs a block of statements in a frame (the statements are the Interpreter's). */
  protected abstract block(block: Block, frame: Frame): Flow;

  constructor(options: InterpreterOptions) {
    this.#chunk = options.chunkName;
    this.#stepLimit = options.stepLimit ?? 50_000_000;
    this.#maxDepth = options.maxDepth ?? 180;
  }

  /** Compiles `source` into a function (the main chunk); throws LuaError on a syntax error. */
  load(source: string): LuaFunction {
    const proto = parse(source, this.#chunk);
    return this.closure(proto, []);
  }

  /** Runs a function from outside any Lua code, with a fresh step budget. */
  run(fn: LuaFunction, args: LuaValue[] = []): LuaValue[] {
    this.#steps = 0;
    return this.call(fn, args);
  }

  call(fn: LuaValue, args: LuaValue[]): LuaValue[] {
    return this.callValue(fn, args, undefined);
  }

  where(level: number): string {
    const frame = this.#frames[this.#frames.length - level];
    return frame ? `${this.#chunk}:${frame.line}:` : "";
  }

  lessThan(a: LuaValue, b: LuaValue): boolean {
    return this.less(a, b, false);
  }

  /** A runtime error at the running Lua line, as luaG_runerror phrases it. */
  error(message: string): LuaError {
    const frame = this.#frames[this.#frames.length - 1];
    const error = new LuaError(`${this.where(1)} ${message}`.trimStart(), frame?.line);
    return error;
  }


  protected closure(proto: FunctionProto, upvalues: readonly Cell[]): LuaFunction {
    return new LuaFunction(proto.name, (args) => this.invoke(proto, upvalues, args));
  }

  private invoke(proto: FunctionProto, upvalues: readonly Cell[], args: readonly LuaValue[]): LuaValue[] {
    if (this.#frames.length >= this.#maxDepth) throw this.error("stack overflow");
    this.step();
    const cells: (Cell | undefined)[] = new Array<Cell | undefined>(proto.slotCount);
    proto.params.forEach((slot, i) => { cells[slot] = { v: args[i] }; });
    const varargs = proto.isVararg ? args.slice(proto.params.length) : [];
    const frame: Frame = { cells, upvalues, varargs, line: proto.line };
    this.#frames.push(frame);
    try {
      const flow = this.block(proto.body, frame);
      return Array.isArray(flow) ? flow : [];
    } catch (error) {
      // The innermost Lua function an error passes through is where Redis says it happened.
      if (error instanceof LuaError && error.line === undefined) error.line = frame.line;
      throw error;
    } finally {
      this.#frames.pop();
    }
  }

  protected callValue(fn: LuaValue, args: LuaValue[], expr: Expr | undefined): LuaValue[] {
    if (fn instanceof LuaFunction) return fn.call(args, this);
    throw this.error(`attempt to call ${describe(expr, fn)}`);
  }

  protected step(): void {
    if (++this.#steps > this.#stepLimit) throw new ScriptKilledError(this.#stepLimit);
  }


  protected less(a: LuaValue, b: LuaValue, orEqual: boolean): boolean {
    if ((typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string")) {
      return orEqual ? a <= b : a < b;
    }
    const ta = typeOf(a);
    const tb = typeOf(b);
    throw this.error(ta === tb ? `attempt to compare two ${ta} values` : `attempt to compare ${ta} with ${tb}`);
  }

  protected index(object: LuaValue, key: LuaValue, expr: Expr | undefined): LuaValue {
    if (object instanceof LuaTable) {
      const value = object.get(key);
      if (value !== undefined || !object.metatable) return value;
      const handler = object.metatable.get("__index");
      if (handler === undefined) return undefined;
      if (handler instanceof LuaFunction) return handler.call([object, key], this)[0];
      return this.index(handler, key, undefined);
    }
    if (typeof object === "string" && this.stringMeta) {
      const lib = this.stringMeta.get("__index");
      return lib instanceof LuaTable ? lib.get(key) : undefined;
    }
    throw this.error(`attempt to index ${describe(expr, object)}`);
  }

  protected setIndex(object: LuaValue, key: LuaValue, value: LuaValue, target: Target): void {
    if (!(object instanceof LuaTable)) {
      throw this.error(`attempt to index ${describe(target.k === "index" ? target.object : undefined, object)}`);
    }
    if (READONLY.has(object)) throw this.error("Attempt to modify a readonly table");
    if (object.metatable && object.get(key) === undefined) {
      const handler = object.metatable.get("__newindex");
      if (handler instanceof LuaFunction) { handler.call([object, key, value], this); return; }
      if (handler instanceof LuaTable) { this.setIndex(handler, key, value, target); return; }
    }
    this.checkKey(key);
    object.set(key as NonNullable<LuaValue>, value);
  }

  protected checkKey(key: LuaValue): void {
    if (key === undefined) throw this.error("table index is nil");
    if (typeof key === "number" && Number.isNaN(key)) throw this.error("table index is NaN");
  }
}

/** How Lua 5.1 names a value in an error: "local 'x' (a nil value)", or just "a nil value". */
export function describe(expr: Expr | undefined, value: LuaValue): string {
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
