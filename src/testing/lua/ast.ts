/**
 * The syntax tree the parser builds and the interpreter walks. Names are resolved while parsing:
 * a local is a slot of its function's frame, an upvalue an index into the closure's captured
 * cells, anything else a global. Every node keeps its source line for error messages.
 */

export type BinaryOp =
  | "+" | "-" | "*" | "/" | "%" | "^" | ".."
  | "==" | "~=" | "<" | "<=" | ">" | ">="
  | "and" | "or";

export type UnaryOp = "-" | "not" | "#";

export type Expr =
  | { readonly k: "nil"; readonly line: number }
  | { readonly k: "true"; readonly line: number }
  | { readonly k: "false"; readonly line: number }
  | { readonly k: "number"; readonly value: number; readonly line: number }
  | { readonly k: "string"; readonly value: string; readonly line: number }
  | { readonly k: "vararg"; readonly line: number }
  | { readonly k: "function"; readonly proto: FunctionProto; readonly line: number }
  | { readonly k: "local"; readonly slot: number; readonly name: string; readonly line: number }
  | { readonly k: "upvalue"; readonly index: number; readonly name: string; readonly line: number }
  | { readonly k: "global"; readonly name: string; readonly line: number }
  | { readonly k: "index"; readonly object: Expr; readonly key: Expr; readonly line: number }
  | { readonly k: "call"; readonly fn: Expr; readonly args: readonly Expr[]; readonly line: number }
  | { readonly k: "method"; readonly object: Expr; readonly name: string; readonly args: readonly Expr[]; readonly line: number }
  | { readonly k: "binary"; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr; readonly line: number }
  | { readonly k: "unary"; readonly op: UnaryOp; readonly operand: Expr; readonly line: number }
  | { readonly k: "table"; readonly items: readonly TableItem[]; readonly line: number }
  | { readonly k: "paren"; readonly inner: Expr; readonly line: number };

export type TableItem =
  | { readonly kind: "positional"; readonly value: Expr }
  | { readonly kind: "keyed"; readonly key: Expr; readonly value: Expr };

/** What may stand left of `=`. */
export type Target = Extract<Expr, { k: "local" | "upvalue" | "global" | "index" }>;

export type Stmt =
  | { readonly k: "local"; readonly slots: readonly number[]; readonly values: readonly Expr[]; readonly line: number }
  | { readonly k: "localFunction"; readonly slot: number; readonly proto: FunctionProto; readonly line: number }
  | { readonly k: "assign"; readonly targets: readonly Target[]; readonly values: readonly Expr[]; readonly line: number }
  | { readonly k: "call"; readonly call: Expr; readonly line: number }
  | { readonly k: "do"; readonly body: Block; readonly line: number }
  | { readonly k: "while"; readonly cond: Expr; readonly body: Block; readonly line: number }
  | { readonly k: "repeat"; readonly body: Block; readonly cond: Expr; readonly line: number }
  | { readonly k: "if"; readonly clauses: readonly { readonly cond: Expr; readonly body: Block }[]; readonly orElse: Block | undefined; readonly line: number }
  | { readonly k: "forNum"; readonly slot: number; readonly start: Expr; readonly limit: Expr; readonly step: Expr | undefined; readonly body: Block; readonly line: number }
  | { readonly k: "forIn"; readonly slots: readonly number[]; readonly values: readonly Expr[]; readonly body: Block; readonly line: number }
  | { readonly k: "return"; readonly values: readonly Expr[]; readonly line: number }
  | { readonly k: "break"; readonly line: number };

export type Block = readonly Stmt[];

/** Where a closure finds an upvalue when it is created: a local of the enclosing function, or one of its upvalues. */
export interface UpvalueSource {
  readonly fromParentLocal: boolean;
  readonly index: number;
}

export interface FunctionProto {
  readonly name: string;
  readonly line: number;
  readonly params: readonly number[];
  readonly isVararg: boolean;
  readonly body: Block;
  /** Frame size: one slot per local declared anywhere in the function. */
  readonly slotCount: number;
  readonly upvalues: readonly UpvalueSource[];
}
