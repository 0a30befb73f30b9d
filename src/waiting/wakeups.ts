/**
 * Wake-up subscriptions: the lock channels this process listens to while it has waiters, on one
 * subscriber connection per node, counted by reference, and closed once nobody has waited for a
 * while. Messages go to one handler; a reconnect (messages may have been missed meanwhile) is
 * reported for every channel listened to. A subscription that cannot be made only costs latency:
 * every waiter also refreshes its ticket, and learns of a grant that way.
 */
import type { RedisSubscriber } from "../adapters/types.js";
import type { Clock } from "../clock.js";
import { boundedBy } from "../deadline.js";
import { publish } from "../diagnostics.js";

/** How long the wake-up connections stay open after the last waiter left. */
const IDLE_CLOSE_MS = 2_000;

export interface WakeupHandler {
  message(channel: string, message: string): void;
  /** Messages on `channel` may have been missed. */
  missed(channel: string): void;
}

/** One channel listened to, for as long as it is referenced. */
export interface Subscription {
  /** Settles once every node confirmed (or failed) the subscription. */
  readonly ready: Promise<void>;
  release(): void;
}

export class Wakeups {
  readonly #open: () => Promise<RedisSubscriber>[];
  readonly #handler: WakeupHandler;
  readonly #clock: Clock;
  readonly #closeMs: number;
  readonly #channels = new Map<string, { refs: number; ready: Promise<void>; listening: boolean }>();
  #subscribers: Promise<RedisSubscriber[]> | undefined;
  #idleTimer: unknown;
  /** The instance's close (its Shutdown's signal): once it aborts, connections are closed, not kept idle. */
  readonly #closed: AbortSignal;

  /** `closeMs` bounds `close()` whatever the network does. */
  constructor(open: () => Promise<RedisSubscriber>[], handler: WakeupHandler, clock: Clock, closeMs: number, closed: AbortSignal) {
    this.#open = open;
    this.#handler = handler;
    this.#clock = clock;
    this.#closeMs = closeMs;
    this.#closed = closed;
  }

  /** Whether this process listens to `channel` now (subscribed and confirmed). */
  listens(channel: string): boolean {
    return this.#channels.get(channel)?.listening === true;
  }

  /**
   * References to `channels` if this process already listens to all of them: taken before an
   * attempt, they guarantee that no announcement made after the attempt is missed. Undefined
   * otherwise (the caller subscribes only if the attempt says it must wait).
   */
  refIfListeningAll(channels: readonly string[]): Subscription | undefined {
    return channels.every((c) => this.listens(c)) ? this.refAll(channels) : undefined;
  }

  /** One reference to each of `channels` (a multi-key waiter hears every key's). */
  refAll(channels: readonly string[]): Subscription {
    const each = channels.map((c) => this.ref(c));
    return { ready: Promise.all(each.map((s) => s.ready)).then(() => {}), release: () => { for (const s of each) s.release(); } };
  }

  ref(channel: string): Subscription {
    this.#clock.clearTimeout(this.#idleTimer);
    let state = this.#channels.get(channel);
    if (!state) {
      const created: { refs: number; ready: Promise<void>; listening: boolean } = { refs: 0, ready: Promise.resolve(), listening: false };
      created.ready = this.#each((s) => s.subscribe(channel)).then(() => { created.listening = true; });
      state = created;
      this.#channels.set(channel, state);
    }
    state.refs++;
    const entry = state;
    let released = false;
    return {
      ready: entry.ready,
      release: () => {
        if (released) return;
        released = true;
        if (--entry.refs > 0 || this.#channels.get(channel) !== entry) return;
        this.#channels.delete(channel);
        void this.#each((s) => s.unsubscribe(channel));
        if (this.#channels.size === 0 && !this.#closed.aborted) {
          // An idle subscriber connection would keep the process alive after its work is done.
          this.#idleTimer = this.#clock.setTimeout(() => void this.#disconnect(), IDLE_CLOSE_MS);
        }
      },
    };
  }

  /** Closes the subscriber connections, within `closeMs` at most (once the instance is closing). */
  async close(): Promise<void> {
    this.#clock.clearTimeout(this.#idleTimer);
    this.#channels.clear();
    await boundedBy(this.#clock, this.#closeMs, this.#disconnect());
  }

  async #disconnect(): Promise<void> {
    if ((this.#channels.size > 0 && !this.#closed.aborted) || !this.#subscribers) return;
    const subscribers = this.#subscribers;
    this.#subscribers = undefined;
    const list = await subscribers;
    await Promise.all(list.map((s) => s.close().catch(() => {})));
  }

  /** Runs `action` on every subscriber; failures are published, never thrown (they cost latency only). */
  async #each(action: (s: RedisSubscriber) => Promise<void>): Promise<void> {
    const subscribers = await this.#connect();
    await Promise.all(subscribers.map((s) => action(s).catch((error: unknown) => {
      publish("error", () => ({ key: "", operation: "subscribe", error: error as Error }));
    })));
  }

  #connect(): Promise<RedisSubscriber[]> {
    if (this.#subscribers) return this.#subscribers;
    const connecting = Promise.allSettled(this.#open().map(async (pending) => {
      const s = await pending;
      s.onMessage((channel, message) => this.#handler.message(channel, message));
      s.onReconnect(() => {
        for (const channel of this.#channels.keys()) this.#handler.missed(channel);
      });
      return s;
    })).then((results) => {
      const open = results.flatMap((r) => {
        if (r.status === "fulfilled") return [r.value];
        publish("error", () => ({ key: "", operation: "subscribe", error: r.reason as Error }));
        return [];
      });
      // Nothing could be opened: the next waiter tries again.
      if (open.length === 0 && this.#subscribers === connecting) this.#subscribers = undefined;
      return open;
    });
    this.#subscribers = connecting;
    return connecting;
  }
}
