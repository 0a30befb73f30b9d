/**
 * A tree-walking evaluator for the syntax tree of parser.ts, with Lua 5.1 semantics. This file
 * runs statements (blocks, loops with closures over per-iteration locals, assignments);
 * expression-evaluator.ts evaluates expressions and call-stack.ts holds frames, calls, indexing
 * and errors.
 */
import type { Block, Expr, Stmt, Target } from "./ast.js";
import { BREAK, type Cell, type Flow, type Frame } from "./call-stack.js";
import { ExpressionEvaluator } from "./expression-evaluator.js";
import { toArith, truthy, type LuaValue } from "./values.js";

/** A Lua 5.1 interpreter: `load` a chunk, then `run` it. */
export class Interpreter extends ExpressionEvaluator {
  protected override block(block: Block, frame: Frame): Flow {
    for (const stmt of block) {
      const flow = this.stmt(stmt, frame);
      if (flow !== undefined) return flow;
    }
    return undefined;
  }

  private stmt(s: Stmt, frame: Frame): Flow {
    frame.line = s.line;
    switch (s.k) {
      case "local": {
        const values = this.list(s.values, frame);
        s.slots.forEach((slot, i) => { frame.cells[slot] = { v: values[i] }; });
        return undefined;
      }
      case "localFunction": {
        const cell: Cell = { v: undefined };
        frame.cells[s.slot] = cell;
        cell.v = this.makeClosure(s.proto, frame);
        return undefined;
      }
      case "assign": return this.assign(s.targets, s.values, frame);
      case "call": this.multi(s.call, frame); return undefined;
      case "do": return this.block(s.body, frame);
      case "while":
        while (truthy(this.expr(s.cond, frame))) {
          this.step();
          const flow = this.block(s.body, frame);
          if (flow === BREAK) break;
          if (flow !== undefined) return flow;
        }
        return undefined;
      case "repeat":
        for (;;) {
          this.step();
          const flow = this.block(s.body, frame);
          if (flow === BREAK) break;
          if (flow !== undefined) return flow;
          if (truthy(this.expr(s.cond, frame))) break;
        }
        return undefined;
      case "if":
        for (const clause of s.clauses) {
          if (truthy(this.expr(clause.cond, frame))) return this.block(clause.body, frame);
        }
        return s.orElse ? this.block(s.orElse, frame) : undefined;
      case "forNum": return this.forNum(s, frame);
      case "forIn": return this.forIn(s, frame);
      case "return": {
        // A lone call in return position passes all its results on.
        return this.list(s.values, frame);
      }
      case "break": return BREAK;
    }
  }

  private assign(targets: readonly Target[], values: readonly Expr[], frame: Frame): Flow {
    if (targets.length === 1 && values.length === 1) {
      const target = targets[0] as Target;
      if (target.k === "index") {
        const object = this.expr(target.object, frame);
        const key = this.expr(target.key, frame);
        this.setIndex(object, key, this.expr(values[0] as Expr, frame), target);
      } else {
        this.store(target, this.expr(values[0] as Expr, frame), frame);
      }
      return undefined;
    }
    // Lua evaluates every table and key on the left, then every value, then assigns.
    const places = targets.map((t) => (t.k === "index" ? { object: this.expr(t.object, frame), key: this.expr(t.key, frame) } : undefined));
    const list = this.list(values, frame);
    for (let i = targets.length - 1; i >= 0; i--) {
      const target = targets[i] as Target;
      const place = places[i];
      if (place) this.setIndex(place.object, place.key, list[i], target);
      else this.store(target, list[i], frame);
    }
    return undefined;
  }

  private store(target: Target, value: LuaValue, frame: Frame): void {
    switch (target.k) {
      case "local": (frame.cells[target.slot] as Cell).v = value; return;
      case "upvalue": (frame.upvalues[target.index] as Cell).v = value; return;
      case "global": this.setIndex(this.globals, target.name, value, target); return;
      default: throw new Error("unreachable");
    }
  }

  private forNum(s: Extract<Stmt, { k: "forNum" }>, frame: Frame): Flow {
    const start = toArith(this.expr(s.start, frame));
    if (start === undefined) throw this.error("'for' initial value must be a number");
    const limit = toArith(this.expr(s.limit, frame));
    if (limit === undefined) throw this.error("'for' limit must be a number");
    const step = s.step ? toArith(this.expr(s.step, frame)) : 1;
    if (step === undefined) throw this.error("'for' step must be a number");
    for (let i = start; step > 0 ? i <= limit : i >= limit; i += step) {
      this.step();
      frame.cells[s.slot] = { v: i };
      const flow = this.block(s.body, frame);
      if (flow === BREAK) break;
      if (flow !== undefined) return flow;
    }
    return undefined;
  }

  private forIn(s: Extract<Stmt, { k: "forIn" }>, frame: Frame): Flow {
    const [fn, state, initial] = this.list(s.values, frame);
    let control = initial;
    for (;;) {
      this.step();
      frame.line = s.line;
      const results = this.callValue(fn, [state, control], undefined);
      if (results[0] === undefined) break;
      control = results[0];
      s.slots.forEach((slot, i) => { frame.cells[slot] = { v: results[i] }; });
      const flow = this.block(s.body, frame);
      if (flow === BREAK) break;
      if (flow !== undefined) return flow;
    }
    return undefined;
  }
}
