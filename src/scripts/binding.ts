/**
 * How a script is bound: its source and SHA from src/scripts/lua.generated.ts, KEYS and ARGV taken
 * as records of the names its header declares, and the parser its reply goes through.
 */
import type { LUA } from "./lua.generated.js";

/** A command argument (a script's KEYS are strings; its ARGV strings or numbers). */
export type RedisArg = string | number;

/** One generated script source: name, SHA, Lua and the KEYS and ARGV names of its header. */
export type Source = (typeof LUA)[keyof typeof LUA];

/** One script, as the endpoint sends it. */
export interface Script<R> {
  readonly name: string;
  readonly sha: string;
  readonly lua: string;
  /**
   * Whether its write grants, prolongs or fences a right: with the `replicas` option it is
   * followed by WAIT and fails unless enough replicas have it. Releases and departures are not:
   * losing one in a failover only keeps a lock until its ttl.
   */
  readonly acknowledged: boolean;
  parse(reply: unknown): R;
}

/** A script with its KEYS and ARGV, ready to send. */
export interface ScriptCall<R> {
  readonly script: Script<R>;
  readonly keys: readonly string[];
  readonly args: readonly RedisArg[];
}

/** A script bound to its header: `call` takes KEYS and ARGV as records of the declared names. */
export interface Binding<S extends Source, R> extends Script<R> {
  call(
    keys: Record<S["keys"][number], string>,
    args: Record<S["args"][number], RedisArg>,
    rest?: { readonly keys?: readonly string[]; readonly args?: readonly RedisArg[] },
  ): ScriptCall<R>;
}

/** Binds `source` to the parser of its reply; `acknowledged` as in {@link Script}. */
export function bind<S extends Source, R>(source: S, acknowledged: boolean, parse: (reply: unknown) => R): Binding<S, R> {
  const script: Binding<S, R> = {
    name: source.name,
    sha: source.sha,
    lua: source.lua,
    acknowledged,
    parse,
    call(keys, args, rest) {
      // Plain loops: this runs twice per acquire and release cycle.
      const keyList: string[] = [];
      for (const k of source.keys as readonly S["keys"][number][]) keyList.push(keys[k]);
      const argList: RedisArg[] = [];
      for (const a of source.args as readonly S["args"][number][]) argList.push(args[a]);
      if (rest?.keys) for (const k of rest.keys) keyList.push(k);
      if (rest?.args) for (const a of rest.args) argList.push(a);
      return { script, keys: keyList, args: argList };
    },
  };
  return script;
}
