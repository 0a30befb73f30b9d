/**
 * The scripts as sources: each one's Lua and SHA (generated from src/scripts/*.lua into
 * lua.generated.ts) and the low-level binding that takes its KEYS and ARGV by the names its header
 * declares (binding.ts). Which script an operation calls, with what, and how its reply is read is
 * the protocol's (src/protocol/): this folder knows nothing of locks.
 */
export { bind } from "./binding.js";
export type { Binding, RedisArg, Script, ScriptCall, Source } from "./binding.js";
export { LUA } from "./lua.generated.js";
