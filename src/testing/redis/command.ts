/** What a command handler sees, and how commands are declared. */
import type { Keyspace } from "./keyspace.js";
import type { Reply } from "./reply.js";

/** Server-wide state a handler may need beyond the keyspace. */
export interface ServerView {
  readonly version: string;
  /** True from Redis 7.2 on: doubles are printed in their shortest form. */
  readonly shortestDoubles: boolean;
  readonly config: ReadonlyMap<string, string>;
  /** Microseconds since the epoch, read live (TIME). */
  timeUs(): number;
  /** Replicas WAIT can count on. */
  readonly replicas: number;
  info(sections: readonly string[]): string;
  publish(channel: string, message: string, sharded: boolean): number;
  loadScript(source: string): string;
  scriptExists(sha: string): boolean;
  flushScripts(): void;
  evalScript(ctx: CommandContext, source: string | undefined, sha: string, keys: readonly string[], args: readonly string[]): Reply;
}

/** One client connection's state. */
export interface ConnectionView {
  readonly id: number;
}

export interface CommandContext {
  readonly ks: Keyspace;
  readonly server: ServerView;
  readonly conn: ConnectionView;
  /** Server ms, read live: what TTLs count from and expiries are set from. */
  now(): number;
  /** True while a script runs the command. */
  readonly inScript: boolean;
}

export interface CommandSpec {
  /** Lower case; a subcommand's is "container|sub". */
  readonly name: string;
  /** As in COMMAND INFO: n exactly, -n at least n (the command name counts). */
  readonly arity: number;
  /** Scripts may not run it. */
  readonly noscript?: boolean;
  readonly run?: (ctx: CommandContext, argv: readonly string[]) => Reply;
  readonly subcommands?: readonly CommandSpec[];
}

export const command = (name: string, arity: number, run: CommandSpec["run"], noscript = false): CommandSpec => ({ name, arity, run, noscript });
