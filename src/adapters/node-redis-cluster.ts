/** Adapter for a node-redis cluster client: commands routed by key, WAIT on the node that owns the slot, sharded wake-ups. */
import { slotOf } from "../keys.js";
import { commandThenWaitOnNode, type NodeSender } from "./cluster-wait.js";
import { keyPrefixOf, SendCommandAdapter, sendAll } from "./node-redis-commands.js";
import { subscriberOver } from "./node-redis-subscriber.js";
import type { NodeRedisClusterLike } from "./node-redis-like.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, RedisSubscriber, ReplicaWait } from "./types.js";

/** The adapter for a node-redis cluster client. */
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
