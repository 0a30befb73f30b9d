/**
 * Adapter for ioredis `Redis` (standalone or Sentinel-backed) and `Cluster` clients. We never add
 * commands to the user's client; we only send commands, add event listeners (removed on close)
 * and duplicate connections for wake-ups.
 */
import { commandThenWaitOnNode, type NodeSender } from "./cluster-wait.js";
import { nodeSender, sendAll, shardSource } from "./ioredis-cluster.js";
import type { IoredisLike, Listener } from "./ioredis-like.js";
import { ioredisSubscriber, SUBSCRIBE_TIMEOUT_MS } from "./ioredis-subscriber.js";
import { ShardedSubscriber } from "./sharded-subscriber.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

/** The adapter for an ioredis `Redis` (standalone or Sentinel-backed) or `Cluster` client. */
export class IoredisAdapter implements RedisAdapter {
  readonly name: string;
  readonly cluster: boolean;
  readonly #client: IoredisLike;
  readonly #nodes: NodeSender;
  /**
   * ioredis prefixes every key it sends (script KEYS included) with this; of the channels, it
   * prefixes SSUBSCRIBE's (a shard channel is a key to Redis) but not SUBSCRIBE's. Our wake-up
   * connections are opened without a prefix and name the full channel themselves, the one the
   * scripts publish on.
   */
  readonly #keyPrefix: string;
  /**
   * Calls on the wire, when the client will not resend them after a reconnect: ioredis then drops
   * them without ever settling their promises, so we settle them when the connection closes.
   */
  #inFlight: Set<(error: Error) => void> | undefined;

  constructor(client: IoredisLike) {
    this.#client = client;
    this.cluster = client.isCluster === true;
    const { host = "127.0.0.1", port = 6379, sentinels, name } = client.options ?? {};
    this.name = this.cluster ? "cluster" : sentinels?.length ? `sentinel:${name ?? "mymaster"}` : `${host}:${port}`;
    this.#nodes = nodeSender(client);
    // A Cluster's prefix may be given at the top level or in redisOptions (ioredis then copies it
    // to the top level, which is what its commands use).
    this.#keyPrefix = client.options?.keyPrefix ?? (this.cluster ? client.options?.redisOptions?.keyPrefix : undefined) ?? "";
    const options = this.cluster ? client.options?.redisOptions : client.options;
    if (options?.autoResendUnfulfilledCommands === false) this.#inFlight = new Set();
  }

  /** Settles every call on the wire when the connection closes (it would never settle otherwise). */
  readonly #onClose = (): void => {
    const dropped = [...(this.#inFlight ?? [])];
    this.#inFlight?.clear();
    this.#client.removeListener?.("close", this.#onClose);
    for (const reject of dropped) reject(new Error("Connection closed before the reply (the client does not resend): the command may or may not have run"));
  };

  /** Stops watching the client's 'close' (Surelock.close()): a call the client drops later stays unsettled, as it would without us. */
  detach(): void {
    this.#client.removeListener?.("close", this.#onClose);
    this.#inFlight = undefined;
  }

  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.#send("EVALSHA", [sha, keys.length, ...keys, ...args]);
  }

  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.#send("EVAL", [script, keys.length, ...keys, ...args]);
  }

  command(args: readonly RedisArg[]): Promise<unknown> {
    const [name, ...rest] = args;
    return this.#send(String(name), rest);
  }

  #send(command: string, args: readonly RedisArg[]): Promise<unknown> {
    const call = this.#client.call(command, ...args);
    const inFlight = this.#inFlight;
    if (!inFlight) return call;
    // The user's client carries our listener only while something of ours is on the wire.
    if (inFlight.size === 0) this.#client.on("close", this.#onClose as Listener);
    return new Promise((resolve, reject) => {
      inFlight.add(reject);
      const settled = (): void => {
        inFlight.delete(reject);
        if (inFlight.size === 0) this.#client.removeListener?.("close", this.#onClose);
      };
      call.then(
        (value) => { settled(); resolve(value); },
        (error: unknown) => { settled(); reject(error); },
      );
    });
  }

  async commandThenWait(args: readonly RedisArg[], key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    if (this.cluster) return commandThenWaitOnNode(this.#nodes, args, key, wait);
    // One pipeline is one write on the client's single connection: WAIT follows the command there,
    // even if the client reconnects to a new primary in between (both go, in order, to the new one).
    const replies = await sendAll(this.#client, [args, ["WAIT", wait.replicas, wait.timeoutMs]]);
    const [reply, waited] = replies;
    if (reply instanceof Error) throw reply;
    return waited instanceof Error ? { reply, acknowledged: 0, waitError: waited } : { reply, acknowledged: Number(waited) || 0 };
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    if (this.cluster) return new ShardedSubscriber(shardSource(this.#client, this.#keyPrefix), SUBSCRIBE_TIMEOUT_MS);
    return ioredisSubscriber(this.#client, this.#keyPrefix, this.name);
  }
}
