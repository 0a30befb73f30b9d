/** The error a Lua program raises, carrying the raised Lua value itself. */
import type { LuaValue } from "./values.js";

export class LuaError extends Error {
  /** What `error(v)` raised (a string for runtime errors; any value for `error(...)`). */
  readonly value: LuaValue;
  /**
   * The line of the innermost Lua function running when the error was raised (what Redis reports
   * as "on @user_script:LINE"); set by the interpreter as the error leaves that function.
   */
  line: number | undefined;

  constructor(value: LuaValue, line?: number) {
    super(typeof value === "string" ? value : `lua error (${typeof value === "object" ? "table" : String(value)})`);
    this.name = "LuaError";
    this.value = value;
    this.line = line;
  }
}
