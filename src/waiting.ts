/**
 * The waiting room. Waiters are woken by the release itself (a pub/sub announcement on the
 * lock's channel) instead of sleeping and retrying.
 *
 * Local waiters of one lock stand in a line and only its head talks to Redis, so a thousand
 * local waiters cost what one does. For queued primitives (mutexes, write locks) the line holds
 * one ticket in the lock's queue in Redis: a free lock goes to the head of that queue, and the
 * release announces whose turn it is, so exactly one process tries, in turn, and a releaser
 * cannot barge back in ahead of the others. In fair mode every waiter is a line of its own,
 * so the queue is in arrival order across all processes.
 *
 * Pub/sub can drop a message (reconnects, a holder that died): every sleep is capped by the
 * holder's remaining TTL and by a safety poll, and a ticket lapses if its line stops refreshing.
 */
import type { RedisSubscriber } from "./adapters/types.js";
import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { now } from "./clock.js";
import { publish } from "./diagnostics.js";
import { ClosedError, LockTimeoutError } from "./errors.js";
import type { Ticket } from "./store.js";

/** How long the wake-up connection stays open after the last waiter left. */
const IDLE_CLOSE_MS = 2_000;
/**
 * How long a ticket stays queued without a refresh: as long as the lock's lease (a process
 * paused or killed while queued holds the others back no longer than its lock would), at most
 * 3 s. A line's head refreshes it three times per lease.
 */
export const ticketLeaseMs = (ttlMs: number): number => Math.min(3_000, Math.max(60, ttlMs));

/** Every waiter listens for close(): thousands of listeners on one signal are expected here. */
function closedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** What one attempt to take the lock gave. */
export type Attempt<T> = { readonly value: T } | { readonly retryInMs: number };

export interface WaitRequest<T> {
  /** The user's key, for errors and events. */
  readonly key: string;
  /** The lock's wake-up channel. */
  readonly channel: string;
  /** Which local line to stand in: callers that compete for the same thing share one. */
  readonly line: string;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** Whether the primitive queues in Redis with tickets (mutexes and write locks do). */
  readonly queued: boolean;
  /** The lock's lease length, which bounds how long a silent ticket stays queued. */
  readonly ttlMs: number;
  /** Fair mode: every waiter holds its own ticket, in arrival order. */
  readonly fair: boolean;
  /** Skip the local line (a re-entry must not wait behind waiters who wait for us). */
  readonly skipLine: boolean;
  /** One try in Redis. */
  attempt(ticket: Ticket | undefined): Promise<Attempt<T>>;
  /** Takes a ticket out of the queue (its line is empty now). */
  leave(ticketId: string): Promise<void>;
  /** Called with a value whose attempt finished after the wait was given up, to give it back. */
  abandon(value: T): void;
}

/** A waiter asleep until woken, polled, timed out or aborted. */
class Sleeper {
  #wake: (() => void) | undefined;
  #pending = false;

  sleep(ms: number, interrupted: Promise<never>): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    let timer: NodeJS.Timeout | undefined;
    const woken = new Promise<void>((resolve) => {
      this.#wake = resolve;
      if (ms < Infinity) timer = setTimeout(resolve, ms);
    });
    return Promise.race([woken, interrupted]).finally(() => {
      clearTimeout(timer);
      this.#wake = undefined;
      this.#pending = false;
    });
  }

  wake(): void {
    if (this.#wake) this.#wake();
    else this.#pending = true;
  }
}

/** Local waiters for one thing, served one at a time; in Redis, at most one ticket. */
interface Line {
  readonly name: string;
  readonly channel: string;
  readonly ticket: string | undefined;
  readonly waiters: Sleeper[];
  /** Waiters plus fast-path attempts in flight: the line lives while this is above zero. */
  active: number;
  /** Announcements meant for this line; an attempt that saw an older count may have missed one. */
  wakes: number;
  /** `wakes` when the last head took the lock: its successor waits for a newer one. */
  takenAt: number;
  /** Whether our ticket is (as far as we know) in the queue in Redis. */
  queued: boolean;
}

interface ChannelState {
  refs: number;
  readonly lines: Set<Line>;
  readonly subscribed: Promise<void>;
}

export class WaitingRoom {
  readonly #open: () => Promise<RedisSubscriber>[];
  readonly #pollMs: number;
  readonly #lines = new Map<string, Line>();
  readonly #channels = new Map<string, ChannelState>();
  readonly #closed = closedController();
  readonly #instance = randomBytes(6).toString("base64url");
  #tickets = 0;
  #subscribers: Promise<RedisSubscriber[]> | undefined;
  /** Closes the subscriber connections once nobody has waited for a while (unref'd). */
  #idleTimer: NodeJS.Timeout | undefined;

  /** `open` creates the subscriber connections (one per node); `pollMs` bounds every sleep. */
  constructor(open: () => Promise<RedisSubscriber>[], pollMs: number) {
    this.#open = open;
    this.#pollMs = pollMs;
  }

  /** Number of channels subscribed (for tests and diagnostics). */
  get subscriptions(): number {
    return this.#channels.size;
  }

  async acquire<T>(req: WaitRequest<T>): Promise<T> {
    const startedAt = now();
    const waited = (): number => now() - startedAt;
    req.signal?.throwIfAborted();
    const shared = !req.fair && !req.skipLine;
    const line = this.#line(req, shared ? req.line : `${req.line}\0${++this.#tickets}`);
    line.active++;
    try {
      if (line.waiters.length === 0) {
        // Nobody local is waiting: try at once, without subscribing (the uncontended path).
        // A single attempt (timeout 0) takes no ticket: it would only have to be taken back.
        const first = await this.#attempt(req, line, false, req.timeoutMs > 0);
        if ("value" in first) return first.value;
        if (req.timeoutMs === 0) throw new LockTimeoutError(req.key, waited(), req.timeoutMs);
      } else if (req.timeoutMs === 0) {
        throw new LockTimeoutError(req.key, waited(), req.timeoutMs);
      }
      return await this.#wait(req, line, startedAt);
    } finally {
      line.active--;
      this.#retire(req, line);
    }
  }

  async #wait<T>(req: WaitRequest<T>, line: Line, startedAt: number): Promise<T> {
    const waited = (): number => now() - startedAt;
    publish("wait", () => ({ key: req.key, phase: "start", waitedMs: waited() }));
    let outcome: "acquired" | "timeout" | "aborted" | "error" = "error";
    const { interrupted, dispose } = this.#interruption(req, startedAt);
    const channel = this.#ref(line);
    const me = new Sleeper();
    line.waiters.push(me);
    const capMs = line.ticket ? Math.min(this.#pollMs, Math.floor(ticketLeaseMs(req.ttlMs) / 3)) : this.#pollMs;
    try {
      // Wait for our turn: the head leaving wakes the next one.
      while (line.waiters[0] !== me) await me.sleep(Infinity, interrupted);
      // A subscription that cannot be made in time only costs latency: the poll covers it.
      let giveUp: NodeJS.Timeout | undefined;
      await Promise.race([channel.subscribed, interrupted, new Promise((r) => { giveUp = setTimeout(r, capMs); })])
        .finally(() => clearTimeout(giveUp));
      // Our predecessor in line just took the lock and kept our ticket queued: wait to be called.
      if (line.takenAt === line.wakes && line.queued) await me.sleep(capMs, interrupted);
      for (;;) {
        const wakes = line.wakes;
        const pending = this.#attempt(req, line, line.waiters.length > 1);
        const result = await Promise.race([pending, interrupted]).catch((error: unknown) => {
          pending.then((late) => { if ("value" in late) req.abandon(late.value); }, () => {});
          throw error;
        });
        if ("value" in result) {
          line.takenAt = wakes;
          outcome = "acquired";
          return result.value;
        }
        if (line.wakes !== wakes) continue; // an announcement for us crossed our attempt
        await me.sleep(Math.min(capMs, result.retryInMs + 1), interrupted);
      }
    } catch (error) {
      if (error instanceof LockTimeoutError) outcome = "timeout";
      else if (req.signal?.aborted && error === req.signal.reason) outcome = "aborted";
      throw error;
    } finally {
      dispose();
      const index = line.waiters.indexOf(me);
      line.waiters.splice(index, 1);
      // The new head takes over; it tries at once if an announcement came in meanwhile.
      if (index === 0) line.waiters[0]?.wake();
      this.#unref(line, channel);
      publish("wait", () => ({ key: req.key, phase: "end", outcome, waitedMs: waited() }));
    }
  }

  /** One attempt for the line; keeps track of whether its ticket is queued in Redis. */
  async #attempt<T>(req: WaitRequest<T>, line: Line, requeue: boolean, queue = true): Promise<Attempt<T>> {
    const ticket = line.ticket === undefined || !queue ? undefined : { id: line.ticket, leaseMs: ticketLeaseMs(req.ttlMs), requeue };
    const result = await req.attempt(ticket);
    if (ticket) line.queued = "value" in result ? requeue : true;
    return result;
  }

  /** Unsubscribes everything and closes the subscriber connections. */
  async close(): Promise<void> {
    this.#closed.abort(new ClosedError());
    clearTimeout(this.#idleTimer);
    this.#channels.clear();
    await this.#disconnect();
  }

  #line(req: WaitRequest<unknown>, name: string): Line {
    let line = this.#lines.get(name);
    if (!line) {
      const ticket = req.queued ? `${this.#instance}:${++this.#tickets}` : undefined;
      line = { name, channel: req.channel, ticket, waiters: [], active: 0, wakes: 0, takenAt: -1, queued: false };
      this.#lines.set(name, line);
    }
    return line;
  }

  /** Forgets an empty line; its ticket leaves the queue so no release announces a line nobody stands in. */
  #retire(req: WaitRequest<unknown>, line: Line): void {
    if (line.active > 0 || this.#lines.get(line.name) !== line) return;
    this.#lines.delete(line.name);
    if (line.queued && line.ticket !== undefined) {
      line.queued = false;
      void req.leave(line.ticket).catch((error: unknown) => {
        publish("error", () => ({ key: req.key, operation: "leave-queue", error: error as Error }));
      });
    }
  }

  #interruption(req: WaitRequest<unknown>, startedAt: number): { interrupted: Promise<never>; dispose: () => void } {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const closed = this.#closed.signal;
    let rejectWith: (reason: unknown) => void = () => {};
    const onClose = (): void => rejectWith(closed.reason);
    const interrupted = new Promise<never>((_, reject) => {
      rejectWith = reject;
      if (closed.aborted) reject(closed.reason);
      closed.addEventListener("abort", onClose, { once: true });
      if (req.timeoutMs < Infinity) {
        // Timers run on a coarser clock than ours and may fire a little early: re-arm until due.
        const arm = (): void => {
          const left = req.timeoutMs - (now() - startedAt);
          if (left <= 0) reject(new LockTimeoutError(req.key, now() - startedAt, req.timeoutMs));
          else timer = setTimeout(arm, Math.ceil(left));
        };
        arm();
      }
      if (req.signal) {
        const signal = req.signal;
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    interrupted.catch(() => {}); // observed by the races above; never unhandled
    return {
      interrupted,
      dispose: () => {
        clearTimeout(timer);
        closed.removeEventListener("abort", onClose);
        if (onAbort) req.signal?.removeEventListener("abort", onAbort);
      },
    };
  }

  #ref(line: Line): ChannelState {
    clearTimeout(this.#idleTimer);
    let channel = this.#channels.get(line.channel);
    if (!channel) {
      channel = { refs: 0, lines: new Set(), subscribed: this.#subscribe(line.channel) };
      this.#channels.set(line.channel, channel);
    }
    channel.refs++;
    channel.lines.add(line);
    return channel;
  }

  #unref(line: Line, channel: ChannelState): void {
    if (line.waiters.length === 0) channel.lines.delete(line);
    if (--channel.refs > 0 || this.#channels.get(line.channel) !== channel) return;
    this.#channels.delete(line.channel);
    void this.#eachSubscriber((s) => s.unsubscribe(line.channel));
    if (this.#channels.size === 0) {
      // An idle subscriber connection would keep the process alive after its work is done.
      this.#idleTimer = setTimeout(() => void this.#disconnect(), IDLE_CLOSE_MS);
      this.#idleTimer.unref();
    }
  }

  async #disconnect(): Promise<void> {
    if (this.#channels.size > 0 || !this.#subscribers) return;
    const subscribers = this.#subscribers;
    this.#subscribers = undefined;
    const list = await subscribers.catch(() => []);
    await Promise.all(list.map((s) => s.close().catch(() => {})));
  }

  async #subscribe(name: string): Promise<void> {
    // Without a subscription we still get the lock, by polling; so a failure only costs latency.
    await this.#eachSubscriber((s) => s.subscribe(name));
  }

  async #eachSubscriber(action: (s: RedisSubscriber) => Promise<void>): Promise<void> {
    try {
      const subscribers = await this.#connect();
      await Promise.all(subscribers.map((s) => action(s).catch((error: unknown) => {
        publish("error", () => ({ key: "", operation: "subscribe", error: error as Error }));
      })));
    } catch (error) {
      publish("error", () => ({ key: "", operation: "subscribe", error: error as Error }));
    }
  }

  #connect(): Promise<RedisSubscriber[]> {
    if (!this.#subscribers) {
      const opened = this.#open().map(async (pending) => {
        const s = await pending;
        s.onMessage((channel, message) => this.#announce(channel, message));
        // Messages published while we were reconnecting are lost: let every waiter try again.
        s.onReconnect(() => { for (const channel of this.#channels.keys()) this.#announce(channel, "*"); });
        return s;
      });
      this.#subscribers = Promise.allSettled(opened).then((results) =>
        results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : [])),
      );
    }
    return this.#subscribers;
  }

  /** A release announced `message`: "*" (anyone) or the ticket whose turn it is. */
  #announce(name: string, message: string): void {
    const channel = this.#channels.get(name);
    if (!channel) return;
    for (const line of channel.lines) {
      if (line.ticket !== undefined && message !== "*" && message !== line.ticket) continue;
      line.wakes++;
      line.waiters[0]?.wake();
    }
  }
}
