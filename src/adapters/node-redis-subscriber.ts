/** The wake-up connection of a node-redis client (any kind): subscriptions, reconnect notices, and connect and close with deadlines. */
import { within } from "../deadline.js";
import type { Closable, Listener, MessageListener, NodeRedisClusterLike, NodeRedisLike, NodeRedisSentinelLike } from "./node-redis-like.js";
import type { RedisSubscriber } from "./types.js";

/** How long the wake-up connection may take to connect (and finish its handshake) before it is given up. */
const CONNECT_TIMEOUT_MS = 2_000;
/** Closes a connection politely, and forcibly when that fails. */
async function shut(c: Closable): Promise<void> {
  try {
    if (c.close) await c.close();
    else if (c.quit) await c.quit();
  } catch {
    if (c.destroy) c.destroy();
    else if (c.disconnect) await c.disconnect().catch(() => {});
  }
}

/**
 * A RedisSubscriber over a duplicate connection: `sharded` uses SSUBSCRIBE; `reconnectEvent` is
 * the event that says the connection (or, for "node-ready", one node's) is back.
 */
export async function subscriberOver(
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
