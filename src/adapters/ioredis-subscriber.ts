/**
 * The wake-up connection of an ioredis `Redis` client (standalone or Sentinel-backed): one
 * duplicate connection that subscribes and resubscribes, with a deadline on every step.
 */
import { within } from "../deadline.js";
import type { IoredisLike, Listener } from "./ioredis-like.js";
import type { RedisSubscriber } from "./types.js";

/** A SUBSCRIBE (or a SSUBSCRIBE, which ioredis never answers when it swallows a MOVED reply to it) fails after this. */
export const SUBSCRIBE_TIMEOUT_MS = 2_000;

/**
 * A subscriber over a duplicate of `client`, opened without the client's key prefix: it names
 * the full channel, `prefix` + channel, which is what the scripts publish on. `name` is the
 * adapter's, for messages.
 */
export function ioredisSubscriber(client: IoredisLike, prefix: string, name: string): RedisSubscriber {
  // A duplicate keeps the client's options, Sentinel ones included: after a failover it asks the
  // sentinels for the new primary and subscribes its channels again.
  // It resubscribes itself: ioredis's own resubscription after a reconnect is a promise nobody
  // awaits, which rejects unhandled when the connection drops again at once.
  const connection = client.duplicate({ keyPrefix: "", autoResubscribe: false });
  const channels = new Set<string>();
  // A duplicate of a `lazyConnect` client is lazy too: nothing would ever connect it.
  if (connection.status === "wait") void connection.connect().catch(() => {});
  let onMessage: (channel: string, message: string) => void = () => {};
  let onReconnect: () => void = () => {};
  let readyOnce = false;
  // One wait for 'ready' however many subscribe meanwhile: a listener each would pass Node's
  // limit of 10 (MaxListenersExceededWarning) when 11 acquires start waiting before it is up.
  let readyWait: Promise<void> | undefined;
  const whenReady = (): Promise<void> =>
    (readyWait ??= readyWithin(connection, SUBSCRIBE_TIMEOUT_MS).finally(() => { readyWait = undefined; }));
  // An 'error' event without a listener would crash the process; the subscriber's
  // failures surface through missed wake-ups, which the safety poll covers.
  connection.on("error", () => {});
  // Scripts publish on their KEYS, which the client prefixed; SUBSCRIBE names are sent as given.
  connection.on("message", ((channel: string, message: string) => onMessage(channel.slice(prefix.length), message)) as Listener);
  connection.on("ready", (() => {
    if (readyOnce) {
      // Failures only cost latency: the waiters' ticket refreshes serve them all the same.
      if (channels.size > 0) within(connection.subscribe(...channels), SUBSCRIBE_TIMEOUT_MS, noReply("SUBSCRIBE after a reconnect")).catch(() => {});
      onReconnect();
    }
    readyOnce = true;
  }) as Listener);
  return {
    subscribe: async (channel) => {
      // A connection that is not up (a partition, a server that accepts and never answers) would
      // queue the SUBSCRIBE for ever: fail instead; the waiter's ticket refresh still serves it.
      if (connection.status !== "ready") await whenReady();
      if (connection.status !== "ready") {
        throw new Error(`the wake-up connection to ${name} is not ready (${connection.status}) after ${SUBSCRIBE_TIMEOUT_MS} ms`);
      }
      channels.add(prefix + channel);
      await within(connection.subscribe(prefix + channel), SUBSCRIBE_TIMEOUT_MS, noReply(`SUBSCRIBE ${prefix + channel}`));
    },
    unsubscribe: async (channel) => {
      channels.delete(prefix + channel);
      if (connection.status !== "ready") return;
      await within(connection.unsubscribe(prefix + channel), SUBSCRIBE_TIMEOUT_MS, noReply(`UNSUBSCRIBE ${prefix + channel}`));
    },
    onMessage: (handler) => { onMessage = handler; },
    onReconnect: (handler) => { onReconnect = handler; },
    close: () => quitWithin(connection, SUBSCRIBE_TIMEOUT_MS),
  };
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

