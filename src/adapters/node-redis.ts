/**
 * Adapters for node-redis (v4 and later) clients and Sentinel clients (the cluster adapter is
 * node-redis-cluster.ts; what each client kind must offer is node-redis-like.ts).
 */
import { acknowledged, keyPrefixOf, SendCommandAdapter, sendAll, waitOf } from "./node-redis-commands.js";
import type { NodeRedisLike, NodeRedisSentinelLike } from "./node-redis-like.js";
import { subscriberOver } from "./node-redis-subscriber.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

/** The adapter for a node-redis client to one server. */
export class NodeRedisAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name: string;
  readonly cluster = false;
  readonly #client: NodeRedisLike;

  constructor(client: NodeRedisLike) {
    super(keyPrefixOf(client));
    this.#client = client;
    const socket = client.options?.socket;
    this.name = client.options?.url ?? `${socket?.host ?? "127.0.0.1"}:${socket?.port ?? 6379}`;
  }

  protected send(args: string[]): Promise<unknown> {
    return this.#client.sendCommand(args);
  }

  async commandThenWait(args: readonly RedisArg[], _key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    return acknowledged(await sendAll((a) => this.#client.sendCommand(a), [this.prefixed(args), waitOf(wait)]));
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    const connection = this.#client.duplicate();
    return subscriberOver(connection, false, this.prefix);
  }
}

/** The adapter for a node-redis Sentinel client: commands to the current primary. */
export class NodeRedisSentinelAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name: string;
  readonly cluster = false;
  readonly #client: NodeRedisSentinelLike;

  constructor(client: NodeRedisSentinelLike) {
    super(keyPrefixOf(client));
    this.#client = client;
    // node-redis keeps the master's name private; the primary's address changes with failovers.
    this.name = "sentinel";
  }

  protected send(args: string[]): Promise<unknown> {
    return this.#client.sendCommand(false, args);
  }

  async commandThenWait(args: readonly RedisArg[], _key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    // The primary's connections are pooled: reserve one so that WAIT follows the write on it.
    const commands = [this.prefixed(args), waitOf(wait)];
    const replies = this.#client.use
      ? await this.#client.use((c) => sendAll((a) => c.sendCommand(false, a), commands))
      : await sendAll((a) => this.#client.sendCommand(false, a), commands);
    return acknowledged(replies);
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    // node-redis moves a Sentinel client's subscriptions to the new primary after a failover.
    const connection = this.#client.duplicate();
    return subscriberOver(connection, false, this.prefix, "topology-change");
  }
}
