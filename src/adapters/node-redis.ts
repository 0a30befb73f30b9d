/** Adapter for node-redis (v4 and later) clients, cluster clients and Sentinel clients. */
import { within } from "../deadline.js";
import { InvalidArgumentError } from "../errors.js";
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

/** How long the wake-up connection may take to connect (and finish its handshake) before it is given up. */
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * The client's `keyPrefix` (node-redis 6.3+). node-redis applies it in its typed commands only,
 * never in sendCommand, which is all we use: we apply it ourselves, to script KEYS and to the
 * wake-up channels (which the scripts publish on as KEYS), so a prefixed client keeps every
 * surelock key inside its namespace as it does its own. A prefix that is not a string (a Buffer)
 * is refused rather than guessed at.
 */
function keyPrefixOf(client: { readonly _keyPrefix?: unknown }): string {
  const prefix = client._keyPrefix;
  if (prefix === undefined || prefix === null || prefix === "") return "";
  if (typeof prefix !== "string") {
    throw new InvalidArgumentError("options.redis", client, "a node-redis client whose keyPrefix is a string (surelock applies it to its keys and channels)");
  }
  return prefix;
}

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

export class NodeRedisClusterAdapter extends SendCommandAdapter implements RedisAdapter {
  readonly name = "cluster";
  readonly cluster = true;
  readonly #client: NodeRedisClusterLike;
  readonly #nodes: NodeSender;

  constructor(client: NodeRedisClusterLike) {
    super(keyPrefixOf(client));
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
    return commandThenWaitOnNode(this.#nodes, this.prefixed(args), key === undefined ? undefined : this.prefix + key, wait);
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    // node-redis keeps one sharded subscriber per primary itself and moves channels whose slot
    // migrated; the duplicate only needs the slot map, not command connections to every node.
    // A cluster client emits no 'ready' of its own: each node's connection, the sharded
    // subscribers' included, reports its own as 'node-ready' (which resubscribes its channels).
    return subscriberOver(this.#client.duplicate({ minimizeConnections: true }), true, this.prefix, "node-ready");
  }
}

async function subscriberOver(
  connection: NodeRedisLike | NodeRedisClusterLike | NodeRedisSentinelLike,
  sharded: boolean,
  prefix: string,
  reconnectEvent = "ready",
): Promise<RedisSubscriber> {
  let onMessage: (channel: string, message: string) => void = () => {};
  let onReconnect: () => void = () => {};
  let readyOnce = reconnectEvent !== "ready";
  // Without an 'error' listener node-redis would throw from its socket; missed wake-ups
  // are covered by the safety poll.
  connection.on("error", () => {});
  if (reconnectEvent !== "node-ready") {
    connection.on(reconnectEvent, (() => {
      if (readyOnce) onReconnect();
      readyOnce = true;
    }) as Listener);
  } else {
    // A node is back when its address was ready before. (A command connection and a subscriber
    // to the same node share the address: the subscriber's first ready may be announced too,
    // which costs each waiter one extra attempt, never a missed wake-up.)
    const seen = new Set<string>();
    connection.on("node-ready", ((node: { host?: string; port?: number }) => {
      const address = `${node.host ?? "?"}:${node.port ?? "?"}`;
      if (seen.has(address)) onReconnect();
      seen.add(address);
    }) as Listener);
  }
  await connectWithin(connection, CONNECT_TIMEOUT_MS);
  // The scripts publish on their (prefixed) KEYS; node-redis never prefixes a channel.
  const deliver: MessageListener = (message, channel) => onMessage(channel.slice(prefix.length), message);
  const sub = connection as NodeRedisLike;
  return {
    subscribe: async (channel) => {
      if (sharded) await (connection as NodeRedisClusterLike).sSubscribe(prefix + channel, deliver);
      else await sub.subscribe(prefix + channel, deliver);
    },
    unsubscribe: async (channel) => {
      if (sharded) await (connection as NodeRedisClusterLike).sUnsubscribe(prefix + channel);
      else await sub.unsubscribe(prefix + channel);
    },
    onMessage: (handler) => { onMessage = handler; },
    onReconnect: (handler) => { onReconnect = handler; },
    close: () => shut(connection),
  };
}

/**
 * connect() with a deadline. node-redis bounds the TCP connect only: a server (or a partition)
 * that accepts and never answers the handshake would leave connect() pending for ever, and the
 * connection would come to life later with nobody to close it. So it is destroyed at the deadline.
 */
async function connectWithin(connection: Closable & { connect(): Promise<unknown> }, ms: number): Promise<void> {
  const connecting = connection.connect();
  try {
    await within(connecting, ms, () => new Error(`the wake-up connection did not connect within ${ms} ms`));
  } catch (error) {
    connecting.catch(() => {});
    if (connection.destroy) connection.destroy();
    else await connection.disconnect?.().catch(() => {});
    throw error;
  }
}
