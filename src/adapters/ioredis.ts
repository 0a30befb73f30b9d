/**
 * Adapter for ioredis `Redis` (standalone or Sentinel-backed) and `Cluster` clients. We never add
 * commands to the user's client; we only send commands, add event listeners (removed on close)
 * and duplicate connections for wake-ups.
 */
import { within } from "../deadline.js";
import { slotOf } from "../keys.js";
import { commandThenWaitOnNode, type NodeSender, type NodeTarget } from "./cluster-wait.js";
import { ShardedSubscriber, type ShardSource } from "./sharded-subscriber.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

type Listener = (...args: never[]) => void;

/** The parts of an ioredis pipeline that we use. */
export interface IoredisPipelineLike {
  call(command: string, ...args: RedisArg[]): IoredisPipelineLike;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The parts of an ioredis `Redis` or `Cluster` that we use. */
export interface IoredisLike {
  call(command: string, ...args: RedisArg[]): Promise<unknown>;
  duplicate(override?: Record<string, unknown>): IoredisLike;
  pipeline(): IoredisPipelineLike;
  on(event: string, listener: Listener): unknown;
  once(event: string, listener: Listener): unknown;
  connect(): Promise<unknown>;
  removeListener?(event: string, listener: () => void): unknown;
  status: string;
  isCluster?: boolean;
  options?: {
    host?: string; port?: number; name?: string; sentinels?: unknown[] | null; keyPrefix?: string;
    autoResendUnfulfilledCommands?: boolean; redisOptions?: { keyPrefix?: string; autoResendUnfulfilledCommands?: boolean };
  };
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  ssubscribe?(...channels: string[]): Promise<unknown>;
  sunsubscribe?(...channels: string[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  /** Cluster only: slot -> node keys (`host:port`), the primary first. */
  slots?: string[][];
  /** Cluster only: the connection of each node. */
  nodes?(role?: "all" | "master" | "slave"): IoredisLike[];
  /** Cluster only. */
  refreshSlotsCache?(): void;
}

export function isIoredis(client: unknown): client is IoredisLike {
  const c = client as Partial<IoredisLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.call === "function" && typeof c.duplicate === "function" &&
    typeof c.status === "string"
  );
}

/** A SSUBSCRIBE that ioredis never answers (it swallows MOVED replies to it) fails after this. */
const SUBSCRIBE_TIMEOUT_MS = 2_000;

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
    // A duplicate keeps the client's options, Sentinel ones included: after a failover it asks the
    // sentinels for the new primary and subscribes its channels again.
    const connection = this.#client.duplicate({ keyPrefix: "" });
    // A duplicate of a `lazyConnect` client is lazy too: nothing would ever connect it.
    if (connection.status === "wait") void connection.connect().catch(() => {});
    let onMessage: (channel: string, message: string) => void = () => {};
    let onReconnect: () => void = () => {};
    let readyOnce = false;
    // An 'error' event without a listener would crash the process; the subscriber's
    // failures surface through missed wake-ups, which the safety poll covers.
    connection.on("error", () => {});
    // Scripts publish on their KEYS, which the client prefixed; SUBSCRIBE names are sent as given.
    const prefix = this.#keyPrefix;
    connection.on("message", ((channel: string, message: string) => onMessage(channel.slice(prefix.length), message)) as Listener);
    connection.on("ready", (() => {
      if (readyOnce) onReconnect();
      readyOnce = true;
    }) as Listener);
    return {
      subscribe: async (channel) => {
        // A connection that is not up (a partition, a server that accepts and never answers) would
        // queue the SUBSCRIBE for ever: fail instead; the waiter's ticket refresh still serves it.
        if (connection.status !== "ready") await readyWithin(connection, SUBSCRIBE_TIMEOUT_MS);
        if (connection.status !== "ready") {
          throw new Error(`the wake-up connection to ${this.name} is not ready (${connection.status}) after ${SUBSCRIBE_TIMEOUT_MS} ms`);
        }
        await within(connection.subscribe(prefix + channel), SUBSCRIBE_TIMEOUT_MS, noReply(`SUBSCRIBE ${prefix + channel}`));
      },
      unsubscribe: async (channel) => {
        if (connection.status !== "ready") return;
        await within(connection.unsubscribe(prefix + channel), SUBSCRIBE_TIMEOUT_MS, noReply(`UNSUBSCRIBE ${prefix + channel}`));
      },
      onMessage: (handler) => { onMessage = handler; },
      onReconnect: (handler) => { onReconnect = handler; },
      close: () => quitWithin(connection, SUBSCRIBE_TIMEOUT_MS),
    };
  }
}

const noReply = (what: string) => (): Error => new Error(`no reply to ${what} within ${SUBSCRIBE_TIMEOUT_MS} ms`);

/**
 * QUIT, and if the server does not answer in time (a partition), drop the connection. A
 * connection that is not up has nothing to say goodbye to: it is dropped at once (a QUIT would
 * wait in its offline queue, and its reconnect attempts would go on meanwhile).
 */
async function quitWithin(connection: IoredisLike, ms: number): Promise<void> {
  if (connection.status !== "ready") {
    connection.disconnect();
    return;
  }
  await within(connection.quit(), ms, () => new Error("no reply to QUIT")).catch(() => {});
  connection.disconnect();
}

/** Resolves when the connection is ready, or after `ms` (the caller then checks its status). */
function readyWithin(connection: IoredisLike, ms: number): Promise<void> {
  let ready = (): void => {};
  const up = new Promise<void>((resolve) => {
    ready = resolve;
    connection.once("ready", ready as Listener);
  });
  return within(up, ms, () => new Error("not ready")).catch(() => {
    connection.removeListener?.("ready", ready as Listener);
  });
}

/** Sends commands back to back in one pipeline; each reply, or the Error returned for it. */
async function sendAll(client: IoredisLike, commands: readonly (readonly RedisArg[])[]): Promise<unknown[]> {
  const pipeline = client.pipeline();
  for (const [name, ...args] of commands) pipeline.call(String(name), ...args);
  const results = (await pipeline.exec()) ?? [];
  return results.map(([error, reply]) => error ?? reply);
}

const addressOf = (node: IoredisLike): string => `${node.options?.host ?? "127.0.0.1"}:${node.options?.port ?? 6379}`;

/** A Cluster node's own connection (the one the Cluster client uses for it), by `host:port`. */
function nodeAt(cluster: IoredisLike, address: string): IoredisLike | undefined {
  return cluster.nodes?.("all").find((node) => addressOf(node) === address);
}

function ownerOf(cluster: IoredisLike, key: string): string | undefined {
  return cluster.slots?.[slotOf(key)]?.[0];
}

function nodeSender(cluster: IoredisLike): NodeSender {
  return {
    async send(target: NodeTarget, commands) {
      const address = "key" in target ? ownerOf(cluster, target.key) : target.address;
      const node = address === undefined ? undefined : nodeAt(cluster, address);
      return node ? sendAll(node, commands) : undefined;
    },
    refresh: () => cluster.refreshSlotsCache?.(),
  };
}

function shardSource(cluster: IoredisLike, prefix: string): ShardSource {
  return {
    ownerOf: (channel) => ownerOf(cluster, prefix + channel),
    open(address, events) {
      const node = nodeAt(cluster, address);
      if (!node) return undefined;
      // A plain connection to that node with the Cluster's connection options. It does not
      // reconnect by itself: the subscriber reopens it, at whichever node then owns its channels.
      const connection = node.duplicate({
        lazyConnect: false, retryStrategy: null, autoResubscribe: false, enableOfflineQueue: true, readOnly: false,
        // ioredis would prefix SSUBSCRIBE's channel (a key to Redis) a second time.
        keyPrefix: "",
      });
      connection.on("smessage", ((channel: string, message: string) => events.message(channel.slice(prefix.length), message)) as Listener);
      connection.on("end", (() => events.broken()) as Listener);
      // ioredis reports a SSUBSCRIBE answered with MOVED this way (and never settles the call).
      connection.on("moved", (() => events.broken()) as Listener);
      connection.on("error", ((error: Error) => {
        // A server-side SUNSUBSCRIBE (its slot migrated away) arrives unasked: ioredis' reply
        // queue is then out of step with the server, so the connection is replaced.
        if (error.message.includes("Command queue state error")) events.broken();
      }) as Listener);
      // Through the named methods: ioredis tracks subscriptions by the lower-case command name,
      // and `call("SSUBSCRIBE")` would crash its reply handler.
      const { ssubscribe, sunsubscribe } = connection;
      if (!ssubscribe || !sunsubscribe) {
        connection.disconnect();
        return undefined;
      }
      return {
        ssubscribe: (channel) => ssubscribe.call(connection, prefix + channel),
        sunsubscribe: (channel) => sunsubscribe.call(connection, prefix + channel),
        close: () => connection.disconnect(),
      };
    },
    watchTopology(handler) {
      cluster.on("refresh", handler);
      return () => cluster.removeListener?.("refresh", handler);
    },
    refresh: () => cluster.refreshSlotsCache?.(),
  };
}
