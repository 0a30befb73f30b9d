/** What the parser knows of one function while it reads it: its locals, scope by scope, and its upvalues. */
import type { UpvalueSource } from "./ast.js";

/** One function being parsed: its scopes of locals and the upvalues its body uses. */
export class FunctionScope {
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
