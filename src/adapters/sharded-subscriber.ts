/**
 * Wake-ups in a Cluster: sharded pub/sub (SSUBSCRIBE) is answered only by the primary that owns
 * the channel's slot, so we keep one subscriber connection per primary and put each channel on
 * the connection of its owner. When the slot map changes (a slot migrated, a replica promoted) or
 * a connection breaks, the channels move to their new owner, and each moved channel gets a "*"
 * message: an announcement may have been missed while it moved, so its waiters try again.
 * A wake-up lost in any other way costs latency only: every wait is also capped by a poll.
 */
import { within } from "../deadline.js";
import type { RedisSubscriber } from "./types.js";

/** A dedicated pub/sub connection to one primary. */
export interface ShardConnection {
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
  close(): void;
}

/** What a connection reports back. */
export interface ShardEvents {
  message(channel: string, message: string): void;
  /** The connection can no longer be trusted: closed, redirected or out of step with the server. */
  broken(): void;
}

/** One client library's view of the Cluster, as the subscriber needs it. */
export interface ShardSource {
  /** `host:port` of the primary that owns the channel's slot, per the client's slot map. */
  ownerOf(channel: string): string | undefined;
  /** Opens a subscriber connection to `address` (undefined if the client has no such node). */
  open(address: string, events: ShardEvents): ShardConnection | undefined;
  /** Calls `handler` after every slot-map refresh; returns the function that stops it. */
  watchTopology(handler: () => void): () => void;
  /** Asks the client to re-read the slot map. */
  refresh(): void;
}

interface Shard {
  readonly address: string;
  readonly connection: ShardConnection;
  readonly channels: Set<string>;
  alive: boolean;
}

const MAX_BACKOFF_MS = 2_000;

export class ShardedSubscriber implements RedisSubscriber {
  readonly #source: ShardSource;
  readonly #timeoutMs: number;
  /** Channels the waiting room asked for. */
  readonly #wanted = new Set<string>();
  /** Channel -> the shard it is subscribed on (or being subscribed on). */
  readonly #placed = new Map<string, Shard>();
  /** Address -> live shard connection. */
  readonly #shards = new Map<string, Shard>();
  readonly #stopWatching: () => void;
  #onMessage: (channel: string, message: string) => void = () => {};
  #resyncTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #closed = false;

  /** `timeoutMs` bounds every SSUBSCRIBE (a client may never answer one that was redirected). */
  constructor(source: ShardSource, timeoutMs: number) {
    this.#source = source;
    this.#timeoutMs = timeoutMs;
    this.#stopWatching = source.watchTopology(() => this.#scheduleResync(0));
  }

  /** Number of open shard connections (for tests). */
  get connections(): number {
    return this.#shards.size;
  }

  async subscribe(channel: string): Promise<void> {
    this.#wanted.add(channel);
    await this.#place(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.#wanted.delete(channel);
    const shard = this.#placed.get(channel);
    if (!shard) return;
    this.#placed.delete(channel);
    shard.channels.delete(channel);
    if (shard.alive) await this.#bounded(shard.connection.sunsubscribe(channel)).catch(() => this.#broken(shard));
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.#onMessage = handler;
  }

  onReconnect(): void {
    // Channels that moved or reconnected are announced one by one (see #resync).
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#stopWatching();
    clearTimeout(this.#resyncTimer);
    for (const shard of this.#shards.values()) shard.connection.close();
    this.#shards.clear();
    this.#placed.clear();
    this.#wanted.clear();
  }

  /** Subscribes `channel` on its owner's connection, unless it is there already. */
  async #place(channel: string): Promise<void> {
    if (this.#closed) return;
    const address = this.#source.ownerOf(channel);
    if (address === undefined) {
      this.#source.refresh();
      this.#scheduleResync();
      throw new Error(`no known owner for the slot of ${channel} yet`);
    }
    const current = this.#placed.get(channel);
    if (current?.alive && current.address === address) return;
    const shard = this.#shards.get(address) ?? this.#open(address);
    if (!shard) {
      this.#source.refresh();
      this.#scheduleResync();
      throw new Error(`no connection to ${address}, the owner of ${channel}`);
    }
    if (current) {
      current.channels.delete(channel);
      if (current.alive) current.connection.sunsubscribe(channel).catch(() => {});
    }
    this.#placed.set(channel, shard);
    shard.channels.add(channel);
    try {
      await this.#bounded(shard.connection.ssubscribe(channel));
    } catch (error) {
      this.#broken(shard);
      throw error;
    }
    // Unsubscribed while the subscription was on its way.
    if (!this.#wanted.has(channel) && this.#placed.get(channel) === shard) {
      this.#placed.delete(channel);
      shard.channels.delete(channel);
      shard.connection.sunsubscribe(channel).catch(() => {});
    }
  }

  #open(address: string): Shard | undefined {
    // The events may only act once the shard exists (and only while it is the live one).
    const ref: { shard?: Shard } = {};
    const connection = this.#source.open(address, {
      message: (channel, message) => {
        if (ref.shard?.alive) this.#onMessage(channel, message);
      },
      broken: () => {
        if (ref.shard) this.#broken(ref.shard);
      },
    });
    if (!connection) return undefined;
    const shard: Shard = { address, connection, channels: new Set(), alive: true };
    ref.shard = shard;
    this.#shards.set(address, shard);
    return shard;
  }

  /** Drops a connection; its channels are placed again (on a fresh one, or at a new owner). */
  #broken(shard: Shard): void {
    if (!shard.alive || this.#closed) return;
    shard.alive = false;
    if (this.#shards.get(shard.address) === shard) this.#shards.delete(shard.address);
    shard.connection.close();
    this.#failures++;
    this.#source.refresh();
    this.#scheduleResync();
  }

  #scheduleResync(delayMs = Math.min(MAX_BACKOFF_MS, 50 * 2 ** this.#failures)): void {
    if (this.#closed) return;
    if (this.#resyncTimer && delayMs > 0) return;
    clearTimeout(this.#resyncTimer);
    this.#resyncTimer = setTimeout(() => {
      this.#resyncTimer = undefined;
      void this.#resync();
    }, delayMs);
    this.#resyncTimer.unref();
  }

  /** Puts every wanted channel on its owner's live connection; announces the ones that moved. */
  async #resync(): Promise<void> {
    const moves: Promise<void>[] = [];
    for (const channel of this.#wanted) {
      const shard = this.#placed.get(channel);
      if (shard?.alive && shard.address === this.#source.ownerOf(channel)) continue;
      moves.push(this.#place(channel).then(() => this.#onMessage(channel, "*")));
    }
    const results = await Promise.allSettled(moves);
    if (results.every((r) => r.status === "fulfilled")) this.#failures = 0;
  }

  #bounded(call: Promise<unknown>): Promise<unknown> {
    return within(call, this.#timeoutMs, () => new Error(`no reply to SSUBSCRIBE within ${this.#timeoutMs} ms`));
  }
}
