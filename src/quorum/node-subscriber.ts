/**
 * One node's wake-up connection in quorum mode. The waiting room subscribes a lock's channel on
 * every node and waits for those calls before it tries the lock, so one node that is down,
 * stopped or partitioned must not hold a waiter up: every call here is bounded by the node's
 * command timeout. A subscription that failed (the node was down, or a client without an
 * offline queue was asked before its new connection was ready) is retried in the background
 * until it takes or the channel is no longer wanted. Wake-ups only save latency: the waiting
 * room's poll covers anything this misses.
 */
import type { RedisSubscriber } from "../adapters/types.js";
import { within } from "../deadline.js";
import { ConnectionError } from "../errors.js";

/** First pause before a failed subscription is tried again; it doubles up to the maximum. */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1_000;

export class NodeSubscriber implements RedisSubscriber {
  readonly #name: string;
  readonly #timeoutMs: number;
  readonly #create: () => Promise<RedisSubscriber>;
  /** The node's connection; undefined after its creation failed (it is created again on demand). */
  #inner: Promise<RedisSubscriber> | undefined;
  /** Channels the waiting room wants, each with the timer of its pending retry, if any. */
  readonly #wanted = new Map<string, NodeJS.Timeout | undefined>();
  #onMessage: (channel: string, message: string) => void = () => {};
  #onReconnect: () => void = () => {};
  #closed = false;

  constructor(name: string, timeoutMs: number, create: () => Promise<RedisSubscriber>) {
    this.#name = name;
    this.#timeoutMs = timeoutMs;
    this.#create = create;
    // Connect now, so the connection is usually ready by the time a waiter needs it.
    this.#connection().catch(() => {});
  }

  subscribe(channel: string): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (!this.#wanted.has(channel)) this.#wanted.set(channel, undefined);
    return this.#bounded(this.#attempt(channel, RETRY_FIRST_MS), `subscribe ${channel}`);
  }

  unsubscribe(channel: string): Promise<void> {
    clearTimeout(this.#wanted.get(channel));
    this.#wanted.delete(channel);
    const inner = this.#inner;
    if (!inner || this.#closed) return Promise.resolve();
    return this.#bounded(inner.then((s) => s.unsubscribe(channel)), `unsubscribe ${channel}`);
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.#onMessage = handler;
  }

  onReconnect(handler: () => void): void {
    this.#onReconnect = handler;
  }

  /** Closes the node's connection; never waits longer than the node's command timeout. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#wanted.values()) clearTimeout(timer);
    this.#wanted.clear();
    const inner = this.#inner;
    if (!inner) return;
    // A connection still being opened is closed once it is there.
    const closing = inner.then((s) => s.close());
    await this.#bounded(closing, "close").catch(() => {});
  }

  async #attempt(channel: string, retryMs: number): Promise<void> {
    try {
      const s = await this.#connection();
      await s.subscribe(channel);
    } catch (error) {
      this.#retryLater(channel, retryMs);
      throw error;
    }
    // Given up while the subscription was on its way: take it back.
    if (!this.#wanted.has(channel) && !this.#closed) {
      await this.#connection().then((s) => s.unsubscribe(channel)).catch(() => {});
    }
  }

  #retryLater(channel: string, ms: number): void {
    if (this.#closed || !this.#wanted.has(channel) || this.#wanted.get(channel) !== undefined) return;
    const timer = setTimeout(() => {
      if (this.#wanted.get(channel) !== timer) return;
      this.#wanted.set(channel, undefined);
      this.#attempt(channel, Math.min(ms * 2, RETRY_MAX_MS)).catch(() => {});
    }, ms);
    timer.unref();
    this.#wanted.set(channel, timer);
  }

  #connection(): Promise<RedisSubscriber> {
    if (this.#inner) return this.#inner;
    const created = this.#create().then((s) => {
      s.onMessage((channel, message) => this.#onMessage(channel, message));
      s.onReconnect(() => this.#onReconnect());
      return s;
    });
    this.#inner = created;
    created.catch(() => {
      if (this.#inner === created) this.#inner = undefined;
    });
    return created;
  }

  #bounded(call: Promise<void>, what: string): Promise<void> {
    return within(call, this.#timeoutMs, () => new ConnectionError(`${what} on ${this.#name}: no reply within ${this.#timeoutMs} ms`)).catch(
      (error: unknown) => {
        throw error instanceof ConnectionError ? error : new ConnectionError(`${what} on ${this.#name} failed`, { cause: error });
      },
    );
  }
}
