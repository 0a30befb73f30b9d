/** Adapter for node-redis (v4 and later) clients, cluster clients and Sentinel clients. */
import { slotOf } from "../keys.js";
import { commandThenWaitOnNode, type NodeSender } from "./cluster-wait.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

type Listener = (...args: never[]) => void;
type MessageListener = (message: string, channel: string) => void;

interface Closable {
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
}

export function isNodeRedisSentinel(client: unknown): client is NodeRedisSentinelLike {
  const c = client as Partial<NodeRedisSentinelLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.getMasterNode === "function"
  );
}

export function isNodeRedis(client: unknown): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.connect === "function" && !("masters" in c) && !isNodeRedisSentinel(c)
  );
}

export function isNodeRedisCluster(client: unknown): client is NodeRedisClusterLike {
  const c = client as Partial<NodeRedisClusterLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" && "masters" in c
  );
}

const strings = (args: readonly RedisArg[]): string[] => args.map(String);

async function shut(c: Closable): Promise<void> {
  try {
    if (c.close) await c.close();
    else if (c.quit) await c.quit();
  } catch {
    if (c.destroy) c.destroy();
    else if (c.disconnect) await c.disconnect().catch(() => {});
  }
}

/** Sends commands without awaiting in between: node-redis writes them in order on one socket. */
async function sendAll(send: (args: string[]) => Promise<unknown>, commands: readonly (readonly RedisArg[])[]): Promise<unknown[]> {
  const settled = await Promise.allSettled(commands.map((c) => send(strings(c))));
  return settled.map((s) => (s.status === "fulfilled" ? s.value : asError(s.reason)));
}

const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

function acknowledged(replies: unknown[]): AcknowledgedReply {
  const [reply, waited] = replies;
  if (reply instanceof Error) throw reply;
  return waited instanceof Error ? { reply, acknowledged: 0, waitError: waited } : { reply, acknowledged: Number(waited) || 0 };
}

const waitOf = (wait: ReplicaWait): RedisArg[] => ["WAIT", wait.replicas, wait.timeoutMs];

/** Scripts and commands over node-redis' sendCommand, written once; each client kind says how to send. */
abstract class SendCommandAdapter {
  /** Sends one command; `key` routes it in a Cluster. */
  protected abstract send(args: string[], key: string | undefined): Promise<unknown>;

  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.send(["EVALSHA", sha, String(keys.length), ...keys, ...strings(args)], keys[0]);
  }

  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.send(["EVAL", script, String(keys.length), ...keys, ...strings(args)], keys[0]);
  }

  command(args: readonly RedisArg[], key?: string): Promise<unknown> {
    return this.send(strings(args), key);
  }
}

export class NodeRedisAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name: string;
  readonly cluster = false;
  readonly #client: NodeRedisLike;

  constructor(client: NodeRedisLike) {
    super();
    this.#client = client;
    const socket = client.options?.socket;
    this.name = client.options?.url ?? `${socket?.host ?? "127.0.0.1"}:${socket?.port ?? 6379}`;
  }

  protected send(args: string[]): Promise<unknown> {
    return this.#client.sendCommand(args);
  }

  async commandThenWait(args: readonly RedisArg[], _key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    return acknowledged(await sendAll((a) => this.#client.sendCommand(a), [args, waitOf(wait)]));
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    const connection = this.#client.duplicate();
    return subscriberOver(connection, false);
  }
}

export class NodeRedisSentinelAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name: string;
  readonly cluster = false;
  readonly #client: NodeRedisSentinelLike;

  constructor(client: NodeRedisSentinelLike) {
    super();
    this.#client = client;
    // node-redis keeps the master's name private; the primary's address changes with failovers.
    this.name = "sentinel";
  }

  protected send(args: string[]): Promise<unknown> {
    return this.#client.sendCommand(false, args);
  }

  async commandThenWait(args: readonly RedisArg[], _key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    // The primary's connections are pooled: reserve one so that WAIT follows the write on it.
    const commands = [args, waitOf(wait)];
    const replies = this.#client.use
      ? await this.#client.use((c) => sendAll((a) => c.sendCommand(false, a), commands))
      : await sendAll((a) => this.#client.sendCommand(false, a), commands);
    return acknowledged(replies);
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    // node-redis moves a Sentinel client's subscriptions to the new primary after a failover.
    const connection = this.#client.duplicate();
    return subscriberOver(connection, false, "topology-change");
  }
}

export class NodeRedisClusterAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name = "cluster";
  readonly cluster = true;
  readonly #client: NodeRedisClusterLike;
  readonly #nodes: NodeSender;

  constructor(client: NodeRedisClusterLike) {
    super();
    this.#client = client;
    this.#nodes = {
      send: async (target, commands) => {
        const node = "key" in target ? client.getSlotMaster?.(slotOf(target.key)) : client.nodeByAddress?.get(target.address);
        if (!node || !client.nodeClient) return undefined;
        const nodeClient = await client.nodeClient(node);
        return sendAll((a) => nodeClient.sendCommand(a), commands);
      },
      // node-redis re-reads the slot map by itself when its own commands meet MOVED.
      refresh: () => {},
    };
  }

  protected send(args: string[], key: string | undefined): Promise<unknown> {
    return this.#client.sendCommand(key, false, args);
  }

  commandThenWait(args: readonly RedisArg[], key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> {
    return commandThenWaitOnNode(this.#nodes, args, key, wait);
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    // node-redis keeps one sharded subscriber per primary itself and moves channels whose slot
    // migrated; the duplicate only needs the slot map, not command connections to every node.
    return subscriberOver(this.#client.duplicate({ minimizeConnections: true }), true);
  }
}

async function subscriberOver(
  connection: NodeRedisLike | NodeRedisClusterLike | NodeRedisSentinelLike,
  sharded: boolean,
  reconnectEvent = "ready",
): Promise<RedisSubscriber> {
  let onMessage: (channel: string, message: string) => void = () => {};
  let onReconnect: () => void = () => {};
  let readyOnce = reconnectEvent !== "ready";
  // Without an 'error' listener node-redis would throw from its socket; missed wake-ups
  // are covered by the safety poll.
  connection.on("error", () => {});
  connection.on(reconnectEvent, (() => {
    if (readyOnce) onReconnect();
    readyOnce = true;
  }) as Listener);
  await connection.connect();
  const deliver: MessageListener = (message, channel) => onMessage(channel, message);
  const sub = connection as NodeRedisLike;
  return {
    subscribe: async (channel) => {
      if (sharded) await (connection as NodeRedisClusterLike).sSubscribe(channel, deliver);
      else await sub.subscribe(channel, deliver);
    },
    unsubscribe: async (channel) => {
      if (sharded) await (connection as NodeRedisClusterLike).sUnsubscribe(channel);
      else await sub.unsubscribe(channel);
    },
    onMessage: (handler) => { onMessage = handler; },
    onReconnect: (handler) => { onReconnect = handler; },
    close: () => shut(connection),
  };
}
