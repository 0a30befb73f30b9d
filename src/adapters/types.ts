/** What surelock needs from a Redis client. Implement it to plug in a client we do not know. */
import type { RedisArg } from "../scripts/binding.js";

export type { RedisArg };

/**
 * The connection that receives wake-up announcements. Channel names are given and reported as
 * surelock names them: the scripts publish on one of their KEYS, so an adapter that prefixes
 * keys subscribes to the prefixed channel and takes the prefix off again in `onMessage`.
 */
export interface RedisSubscriber {
  /**
   * Starts receiving messages on `channel` (SSUBSCRIBE in a Cluster); resolves once the server
   * confirmed, so that a message published after it resolves is delivered.
   */
  subscribe(channel: string): Promise<void>;
  /** Stops receiving messages on `channel`; resolves once the server confirmed. */
  unsubscribe(channel: string): Promise<void>;
  /** Sets the one handler that receives every message (a second call replaces it), once each, in order. */
  onMessage(handler: (channel: string, message: string) => void): void;
  /**
   * Sets a handler called after the connection came back, with its channels subscribed again
   * (messages may have been missed meanwhile). An adapter may instead deliver the message `"*"`
   * on each channel it subscribed again (the Cluster adapters do, channel by channel).
   */
  onReconnect(handler: () => void): void;
  /** Closes the connection; nothing is delivered to it afterwards. */
  close(): Promise<void>;
}

/** How many replicas must have a write, and how long to wait for them (the arguments of WAIT). */
export interface ReplicaWait {
  /** Replicas that must acknowledge the write (WAIT's numreplicas), at least 1. */
  readonly replicas: number;
  /** Longest wait in ms (WAIT's timeout; never 0, which would block forever). */
  readonly timeoutMs: number;
}

/** What `commandThenWait` gives back: the command's reply and what WAIT answered. */
export interface AcknowledgedReply {
  /** The reply of the write command itself. */
  readonly reply: unknown;
  /** Replicas that acknowledged the write within the timeout (0 when WAIT itself failed). */
  readonly acknowledged: number;
  /** Why WAIT failed, when it did (the write itself went through). */
  readonly waitError?: unknown;
}

/**
 * One Redis deployment as seen through a client: a standalone server, a Sentinel-managed
 * primary, or a Cluster. In quorum mode each independent primary has its own adapter.
 */
export interface RedisAdapter {
  /** A short name for messages, such as `127.0.0.1:6379`. */
  readonly name: string;
  /** True for a Cluster: keys of one lock share a slot and wake-ups use sharded pub/sub. */
  readonly cluster: boolean;
  /** `EVALSHA sha numkeys keys... args...`; rejects with the server's error (NOSCRIPT included). */
  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown>;
  /** `EVAL script numkeys keys... args...`. */
  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown>;
  /**
   * Any other command, for example `["INFO", "server"]`. `key`, a surelock key, routes it in a
   * Cluster; when `args[1]` is that key (`["HGET", key, "t"]`), the adapter treats it as it treats
   * script KEYS (its key prefix included), so the command reads what the scripts wrote.
   */
  command(args: readonly RedisArg[], key?: string): Promise<unknown>;
  /**
   * Opens the extra connection(s) used for wake-ups (closed by `Surelock.close()`): one for a
   * standalone or Sentinel deployment, one per primary for a Cluster.
   */
  createSubscriber(): Promise<RedisSubscriber>;
  /**
   * Optional, used only with the `replicas` option: sends `args` (a write, such as EVALSHA)
   * and then `WAIT replicas timeout` on the same connection, to the node that owns `key`'s slot
   * in a Cluster. WAIT only counts the writes of its own connection, so both must travel
   * together. Rejects with the write's error (NOSCRIPT included) if the write failed.
   *
   * Without it, surelock sends WAIT through `command()` after the write, which is only right if
   * the adapter uses one connection per node for everything (a WAIT on another connection
   * answers for that connection's writes, usually none, and so reports success too easily).
   */
  commandThenWait?(args: readonly RedisArg[], key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply>;
  /**
   * Optional: called once by `Surelock.close()` after its last command. Removes whatever the
   * adapter attached to the user's client (event listeners); the client itself stays open, it is
   * the user's. A call still on the wire then settles only as the client settles it.
   */
  detach?(): void;
}
