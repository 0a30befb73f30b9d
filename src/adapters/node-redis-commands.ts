/**
 * Scripts and commands over node-redis' sendCommand, shared by its client kinds: the client's
 * keyPrefix applied to every key, and a write followed by WAIT on one connection.
 */
import { InvalidArgumentError } from "../errors.js";
import type { AcknowledgedReply, RedisArg, ReplicaWait } from "./types.js";

const strings = (args: readonly RedisArg[]): string[] => args.map(String);
/**
 * The client's `keyPrefix` (node-redis 6.3+). node-redis applies it in its typed commands only,
 * never in sendCommand, which is all we use: we apply it ourselves, to script KEYS and to the
 * wake-up channels (which the scripts publish on as KEYS), so a prefixed client keeps every
 * surelock key inside its namespace as it does its own. A prefix that is not a string (a Buffer)
 * is refused rather than guessed at.
 */
export function keyPrefixOf(client: { readonly _keyPrefix?: unknown }): string {
  const prefix = client._keyPrefix;
  if (prefix === undefined || prefix === null || prefix === "") return "";
  if (typeof prefix !== "string") {
    throw new InvalidArgumentError("options.redis", client, "a node-redis client whose keyPrefix is a string (surelock applies it to its keys and channels)");
  }
  return prefix;
}
/** Sends commands without awaiting in between: node-redis writes them in order on one socket. */
export async function sendAll(send: (args: string[]) => Promise<unknown>, commands: readonly (readonly RedisArg[])[]): Promise<unknown[]> {
  const settled = await Promise.allSettled(commands.map((c) => send(strings(c))));
  return settled.map((s) => (s.status === "fulfilled" ? s.value : asError(s.reason)));
}

const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

export function acknowledged(replies: unknown[]): AcknowledgedReply {
  const [reply, waited] = replies;
  if (reply instanceof Error) throw reply;
  return waited instanceof Error ? { reply, acknowledged: 0, waitError: waited } : { reply, acknowledged: Number(waited) || 0 };
}

export const waitOf = (wait: ReplicaWait): RedisArg[] => ["WAIT", wait.replicas, wait.timeoutMs];

/** Scripts and commands over node-redis' sendCommand, written once; each client kind says how to send. */
export abstract class SendCommandAdapter {
  /** The client's keyPrefix, which we apply to every key and wake-up channel (see keyPrefixOf). */
  protected readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** Sends one command; `key` routes it in a Cluster (already prefixed). */
  protected abstract send(args: string[], key: string | undefined): Promise<unknown>;

  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    const full = keys.map((k) => this.prefix + k);
    return this.send(["EVALSHA", sha, String(keys.length), ...full, ...strings(args)], full[0]);
  }

  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    const full = keys.map((k) => this.prefix + k);
    return this.send(["EVAL", script, String(keys.length), ...full, ...strings(args)], full[0]);
  }

  /**
   * Any other command. `key`, a surelock key, routes it; when the command names that key as its
   * first argument (`HGET key field`), the prefix goes on it there too, as it does on script KEYS
   * (and as ioredis does by itself): the command then reads what the scripts wrote.
   */
  command(args: readonly RedisArg[], key?: string): Promise<unknown> {
    const sent = strings(args);
    if (key === undefined) return this.send(sent, undefined);
    if (this.prefix !== "" && sent[1] === key) sent[1] = this.prefix + key;
    return this.send(sent, this.prefix + key);
  }

  /** A script call then WAIT, with the script's KEYS prefixed (`args` as the endpoint builds it). */
  protected prefixed(args: readonly RedisArg[]): RedisArg[] {
    const [name, body, count, ...rest] = args;
    if ((name !== "EVALSHA" && name !== "EVAL") || this.prefix === "") return [...args];
    const n = Number(count);
    return [name, body as RedisArg, count as RedisArg, ...rest.slice(0, n).map((k) => this.prefix + String(k)), ...rest.slice(n)];
  }
}
