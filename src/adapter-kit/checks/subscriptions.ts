/** Checks of the adapter's subscribers: subscribe, unsubscribe, reconnect after a cut connection, close. */
import type { RedisSubscriber } from "../../adapters/types.js";
import { messageOf } from "../error-replies.js";
import { call, eventually, key, must, Skipped, step, verdict, type Check, type CheckContext } from "./check-steps.js";
import { publish, UNICODE } from "./kit-scripts.js";

/** The messages a subscriber delivered, and a way to wait for the next matching one. */
class Inbox {
  readonly messages: { channel: string; message: string }[] = [];
  #waiters: { test: (channel: string, message: string) => boolean; resolve: () => void }[] = [];

  readonly push = (channel: string, message: string): void => {
    this.messages.push({ channel, message });
    for (const w of this.#waiters.filter((x) => x.test(channel, message))) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
  };

  /** Resolves when a matching message has arrived (or already had). */
  until(test: (channel: string, message: string) => boolean): Promise<void> {
    if (this.messages.some((m) => test(m.channel, m.message))) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ test, resolve }));
  }
}

/** Opens a subscriber with an inbox; `use` runs with it, and it is closed afterwards (best effort). */
async function withSubscriber<T>(ctx: CheckContext, use: (s: RedisSubscriber, inbox: Inbox) => Promise<T>): Promise<T> {
  const subscriber = await must(ctx, "createSubscriber()", () => ctx.adapter.createSubscriber());
  const inbox = new Inbox();
  subscriber.onMessage(inbox.push);
  try {
    return await use(subscriber, inbox);
  } finally {
    await step(ctx, "close()", call(() => subscriber.close())).catch(() => {});
  }
}

const channelName = (ctx: CheckContext, part: string): string => key(ctx, `ch:${part}`);

/**
 * subscribe() resolves once the server confirmed (a message published right after reaches it),
 * messages arrive in order with the channel as it was subscribed (the adapter's prefix taken
 * off), on one handler for every channel, and onMessage replaces that handler.
 */
export const subscribe: Check = (ctx) => withSubscriber(ctx, async (subscriber, inbox) => {
  const problems: string[] = [];
  const first = channelName(ctx, "first");
  const second = channelName(ctx, UNICODE);
  await must(ctx, "subscribe()", () => subscriber.subscribe(first));
  await must(ctx, "subscribe() of a second channel", () => subscriber.subscribe(second));
  const sent = ["m1", "m2", UNICODE, "g ticket 1732010203040506 30000"];
  for (const message of sent) {
    const receivers = await publish(ctx, first, message);
    if (receivers < 1) problems.push(`a message published right after subscribe() resolved reached ${receivers} subscribers: subscribe() must resolve only once the server confirmed`);
  }
  await publish(ctx, second, "on the second channel");
  await step(ctx, "the messages", inbox.until((c, m) => c === second && m === "on the second channel")).catch((error: unknown) => {
    problems.push(`${messageOf(error)}; delivered: ${JSON.stringify(inbox.messages)}`);
  });
  const expected = [...sent.map((message) => ({ channel: first, message })), { channel: second, message: "on the second channel" }];
  if (JSON.stringify(inbox.messages) !== JSON.stringify(expected)) {
    problems.push(`delivered ${JSON.stringify(inbox.messages)}, expected ${JSON.stringify(expected)} (each message once, in order, ` +
      "with the channel name given to subscribe(): without the adapter's key prefix, as the channel is a script's KEYS entry)");
  }
  const replacement = new Inbox();
  subscriber.onMessage(replacement.push);
  const before = inbox.messages.length;
  await publish(ctx, first, "after onMessage");
  await step(ctx, "a message to the new handler", replacement.until((_, m) => m === "after onMessage")).catch((error: unknown) => {
    problems.push(`after a second onMessage(): ${messageOf(error)}`);
  });
  if (inbox.messages.length !== before) problems.push("after a second onMessage(), the first handler still received messages: onMessage sets the one handler");
  return verdict(problems, "subscribe() resolves once confirmed; messages arrive once, in order, on the subscribed (unprefixed) channel, UTF-8 intact; onMessage replaces the handler");
});

/** unsubscribe() stops the channel, and only that channel. */
export const unsubscribe: Check = (ctx) => withSubscriber(ctx, async (subscriber, inbox) => {
  const problems: string[] = [];
  const gone = channelName(ctx, "gone");
  const kept = channelName(ctx, "kept");
  await must(ctx, "subscribe()", () => subscriber.subscribe(gone));
  await must(ctx, "subscribe()", () => subscriber.subscribe(kept));
  await must(ctx, "unsubscribe()", () => subscriber.unsubscribe(gone));
  const receivers = await publish(ctx, gone, "after unsubscribe");
  if (receivers !== 0) problems.push(`a message published after unsubscribe() resolved reached ${receivers} subscribers`);
  await publish(ctx, kept, "still subscribed");
  await step(ctx, "a message on the channel still subscribed", inbox.until((c, m) => c === kept && m === "still subscribed")).catch((error: unknown) => {
    problems.push(messageOf(error));
  });
  if (inbox.messages.some((m) => m.channel === gone)) problems.push("a message arrived on the unsubscribed channel");
  return verdict(problems, "unsubscribe() resolves once the channel is off; other channels go on");
});

/** Parses CLIENT LIST: one `k=v ...` line per connection. */
function clientList(reply: unknown): Map<string, Record<string, string>> {
  const clients = new Map<string, Record<string, string>>();
  for (const line of String(reply).split("\n")) {
    const fields = Object.fromEntries(line.trim().split(" ").flatMap((pair) => {
      const i = pair.indexOf("=");
      return i > 0 ? [[pair.slice(0, i), pair.slice(i + 1)]] : [];
    })) as Record<string, string>;
    if (fields.id !== undefined) clients.set(fields.id, fields);
  }
  return clients;
}

/**
 * The default way to cut a subscriber's connection: find it with CLIENT LIST (a pub/sub
 * connection that appeared with it, subscribed to exactly `count` channels) and CLIENT KILL it.
 * Returns undefined once done, or why it could not.
 */
async function clientKill(ctx: CheckContext, route: string, before: ReadonlySet<string>, count: number): Promise<string | undefined> {
  let listed: unknown;
  try {
    listed = await step(ctx, "CLIENT LIST", call(() => ctx.adapter.command(["CLIENT", "LIST", "TYPE", "pubsub"], route)));
  } catch (error) {
    return `CLIENT LIST failed (${messageOf(error)}); pass options.dropSubscribers to cut the subscriber's connection another way`;
  }
  const field = ctx.adapter.cluster ? "ssub" : "sub";
  const found = [...clientList(listed).values()].filter((c) => !before.has(c.id as string) && Number(c[field]) === count);
  if (found.length !== 1) {
    return `CLIENT LIST showed ${found.length} new pub/sub connections subscribed to ${count} channels, so the subscriber's own could not be told apart; ` +
      "pass options.dropSubscribers to cut it another way";
  }
  try {
    await step(ctx, "CLIENT KILL", call(() => ctx.adapter.command(["CLIENT", "KILL", "ID", (found[0] as Record<string, string>).id as string], route)));
  } catch (error) {
    return `CLIENT KILL failed (${messageOf(error)}); pass options.dropSubscribers to cut the subscriber's connection another way`;
  }
  return undefined;
}

/**
 * After its connection was cut, the subscriber says so (onReconnect, or a "*" message on each
 * channel: messages may have been missed) and its channels deliver again without being asked.
 */
export const reconnect: Check = async (ctx) => {
  if (ctx.dropSubscribers === false) throw new Skipped("options.dropSubscribers is false");
  const channels = [channelName(ctx, "r1"), channelName(ctx, "r2")];
  const route = channels[0] as string;
  let before = new Set<string>();
  if (ctx.dropSubscribers === undefined) {
    try {
      before = new Set(clientList(await step(ctx, "CLIENT LIST", call(() => ctx.adapter.command(["CLIENT", "LIST", "TYPE", "pubsub"], route)))).keys());
    } catch (error) {
      throw new Skipped(`CLIENT LIST failed (${messageOf(error)}), so the subscriber's connection cannot be found and cut; pass options.dropSubscribers to cut it another way`);
    }
  }
  return withSubscriber(ctx, async (subscriber, inbox) => {
    let announced = false;
    const reconnected = new Promise<void>((resolve) => subscriber.onReconnect(() => { announced = true; resolve(); }));
    for (const channel of channels) await must(ctx, "subscribe()", () => subscriber.subscribe(channel));
    const starred = Promise.all(channels.map((c) => inbox.until((ch, m) => ch === c && m === "*")));
    if (ctx.dropSubscribers) {
      await must(ctx, "options.dropSubscribers()", async () => { await (ctx.dropSubscribers as () => void | Promise<void>)(); });
    } else {
      const why = await clientKill(ctx, route, before, channels.length);
      if (why !== undefined) throw new Skipped(why);
    }
    await step(ctx, 'onReconnect() or a "*" message on every channel after the connection was cut', Promise.race([reconnected, starred]));
    const how = announced ? "onReconnect() was called" : 'a "*" message came on every channel';
    for (const channel of channels) {
      let n = 0;
      await eventually(ctx, `${channel} to deliver again after the reconnect (the adapter must subscribe its channels again)`, async () => {
        const message = `after reconnect ${++n}`;
        if ((await publish(ctx, channel, message)) < 1) return false;
        await step(ctx, "the message after the reconnect", inbox.until((c, m) => c === channel && m === message));
        return true;
      });
    }
    return `after the connection was cut, ${how} and both channels delivered again`;
  });
};

/**
 * close() resolves, and the server no longer delivers to the closed subscriber. (withSubscriber
 * closes it again afterwards, in case a step failed before: a second close() must be harmless.)
 */
export const close: Check = (ctx) => withSubscriber(ctx, async (subscriber) => {
  const channel = channelName(ctx, "closed");
  await must(ctx, "subscribe()", () => subscriber.subscribe(channel));
  await must(ctx, "close()", () => subscriber.close());
  // The server drops the subscription when it has processed the disconnect, a moment after QUIT's reply.
  await eventually(ctx, "the closed subscriber's subscription to end", async () => (await publish(ctx, channel, "after close")) === 0);
  return "close() resolves and the subscription ends with it";
});
