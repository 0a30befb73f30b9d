/**
 * An ioredis `Cluster` as the adapter needs it: a command sent to the node that owns a key, and
 * the shard connections of the sharded subscriber (sharded-subscriber.ts).
 */
import { slotOf } from "../keys.js";
import type { NodeSender, NodeTarget } from "./cluster-wait.js";
import type { IoredisLike, Listener } from "./ioredis-like.js";
import type { ShardSource } from "./sharded-subscriber.js";
import type { RedisArg } from "./types.js";

/** Sends commands back to back in one pipeline; each reply, or the Error returned for it. */
export async function sendAll(client: IoredisLike, commands: readonly (readonly RedisArg[])[]): Promise<unknown[]> {
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

/** The address of the primary that owns `key`'s slot, from the client's slot map. */
function ownerOf(cluster: IoredisLike, key: string): string | undefined {
  return cluster.slots?.[slotOf(key)]?.[0];
}

/** Sends commands to the node that owns a key, or to a node by address, on its own connection. */
export function nodeSender(cluster: IoredisLike): NodeSender {
  return {
    async send(target: NodeTarget, commands) {
      const address = "key" in target ? ownerOf(cluster, target.key) : target.address;
      const node = address === undefined ? undefined : nodeAt(cluster, address);
      return node ? sendAll(node, commands) : undefined;
    },
    refresh: () => cluster.refreshSlotsCache?.(),
  };
}

/** The Cluster's shards, for a sharded subscriber: who owns a channel, and a connection to a node. */
export function shardSource(cluster: IoredisLike, prefix: string): ShardSource {
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
