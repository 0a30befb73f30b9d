/**
 * Adapters for node-redis (v4 and later) clients and Sentinel clients, and what surelock uses of
 * each node-redis client kind (the cluster adapter is node-redis-cluster.ts).
 */
import { acknowledged, keyPrefixOf, SendCommandAdapter, sendAll, waitOf } from "./node-redis-commands.js";
import { subscriberOver } from "./node-redis-subscriber.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

/** Any event listener. */
export type Listener = (...args: never[]) => void;
/** node-redis' pub/sub listener. */
export type MessageListener = (message: string, channel: string) => void;

/** The ways node-redis clients close (they differ by version and kind). */
export interface Closable {
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** The parts of a node-redis client that we use. */
export interface NodeRedisLike extends Closable {
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  sSubscribe?(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe?(channel: string): Promise<unknown>;
  isOpen: boolean;
  options?: { url?: string; socket?: { host?: string; port?: number } };
  /** node-redis 6.3+: the `keyPrefix` option (applied by its typed commands, not by sendCommand). */
  readonly _keyPrefix?: unknown;
}

/** What node-redis' cluster client calls a node. */
interface ClusterNodeLike {
  readonly address?: string;
}

/** The parts of a node-redis cluster client that we use. */
export interface NodeRedisClusterLike extends Closable {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  duplicate(overrides?: Record<string, unknown>): NodeRedisClusterLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  sSubscribe(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
  masters: unknown;
  getSlotMaster?(slot: number): ClusterNodeLike;
  nodeByAddress?: Map<string, ClusterNodeLike>;
  nodeClient?(node: ClusterNodeLike): Promise<NodeRedisLike> | NodeRedisLike;
  readonly _keyPrefix?: unknown;
}

/** The parts of a node-redis Sentinel client (`createSentinel`, node-redis v5+) that we use. */
export interface NodeRedisSentinelLike extends Closable {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  duplicate(): NodeRedisSentinelLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  getMasterNode(): { host: string; port: number } | undefined;
  /** Runs `fn` on one pooled connection to the primary, reserved for it meanwhile. */
  use?<T>(fn: (client: { sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown> }) => Promise<T>): Promise<T>;
  readonly _keyPrefix?: unknown;
}

/** A node-redis Sentinel client (`createSentinel`). */
export function isNodeRedisSentinel(client: unknown): client is NodeRedisSentinelLike {
  const c = client as Partial<NodeRedisSentinelLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.getMasterNode === "function"
  );
}

/** A node-redis client to one server. */
export function isNodeRedis(client: unknown): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.connect === "function" && !("masters" in c) && !isNodeRedisSentinel(c)
  );
}

/** A node-redis cluster client (`createCluster`). */
export function isNodeRedisCluster(client: unknown): client is NodeRedisClusterLike {
  const c = client as Partial<NodeRedisClusterLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" && "masters" in c
  );
}

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
