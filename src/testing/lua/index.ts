/** A small Lua 5.1 interpreter: the subset of the language and libraries Redis scripts use. */
import { installBase } from "./base-lib.js";
import type { InterpreterOptions } from "./call-stack.js";
import { Interpreter } from "./interpreter.js";
import { mathLibrary } from "./math-lib.js";
import { stringLibrary } from "./string-lib.js";
import { tableLibrary } from "./table-lib.js";
import { LuaTable } from "./values.js";

export { Interpreter } from "./interpreter.js";
export { ScriptKilledError, READONLY } from "./call-stack.js";
export type { InterpreterOptions } from "./call-stack.js";
export { LuaError } from "./errors.js";
export { LuaFunction, LuaTable, LuaUserdata, tostring, typeOf, truthy } from "./values.js";
export type { LuaValue, LuaRuntime } from "./values.js";
export { cjsonLibrary, JSON_NULL } from "./cjson.js";
export { number2string, formatFloat, str2number } from "./number.js";
export { library, native, Args } from "./args.js";

/** An interpreter with the base, string, table and math libraries installed. */
export function createInterpreter(options: InterpreterOptions): Interpreter {
  const lua = new Interpreter(options);
  const g = lua.globals;
  installBase(g);
  const string = stringLibrary();
  g.set("string", string);
  g.set("table", tableLibrary());
  g.set("math", mathLibrary());
  const meta = new LuaTable();
  meta.set("__index", string);
  lua.stringMeta = meta;
  return lua;
}
