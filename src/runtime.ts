/**
 * What every primitive of one Surelock shares: the store (one deployment or a quorum), the clock,
 * the watchdog, the waiting room and its wake-up subscriptions, the sections that carry
 * reentrancy, this process's holds, and the instance's Shutdown (its one close state), whose
 * signal ends every wait.
 */
import { trustedUntil, type Clock } from "./clock.js";
import type { Shutdown } from "./deadline.js";
import type { Engine, Obtain, ObtainResult } from "./engine.js";
import { DeadlockError, LockTimeoutError } from "./errors.js";
import { Ids, ownerOf } from "./ids.js";
import type { KeySpace } from "./keys.js";
import { Hold } from "./lease/hold.js";
import { Keepalive } from "./lease/keepalive.js";
import { Lease, type LeaseRuntime } from "./lease/lease.js";
import { Sections } from "./lease/sections.js";
import type { AcquireCall, Grant, SharedTarget, Store } from "./store/types.js";
import { refusal, type Obtained } from "./waiting/obtained.js";
import { ticketLeaseMs, WaitingRoom } from "./waiting/waiting-room.js";
import { Wakeups, type Subscription, type WakeupHandler } from "./waiting/wakeups.js";

/** Someone other than a waiter who listens to a lock's channel (an election's observer, a latch's waiter). */
export interface ChannelListener {
  message(message: string): void;
  /** Messages may have been missed (the subscriber reconnected). */
  missed(): void;
}

export interface RuntimeOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly keys: KeySpace;
  /** The instance's close, which the Surelock owns. */
  readonly shutdown: Shutdown;
  /** The wait of an acquire that names no timeout, ms (Infinity: none). */
  readonly acquireTimeoutMs: number;
  /** Longest pause between two checks of a waiting ticket, ms. */
  readonly pollMs: number;
  /** Longest wait for any one step of close(), ms. */
  readonly closeMs: number;
  /** The longest a store call can take before it settles by itself, ms. */
  readonly callBoundMs: number;
  /**
   * The longest an acquire's first attempt takes before it settles by itself, when that bound is
   * sure (one deployment: its command timeout); absent, every wait makes its interruption at once.
   */
  readonly attemptBoundMs?: number;
}

/** The Redis engine: the lock protocol's scripts, the waiting room and the batched watchdog. */
export class Runtime implements LeaseRuntime, Engine {
  readonly kind = "redis" as const;
  readonly store: Store;
  readonly clock: Clock;
  readonly keys: KeySpace;
  readonly acquireTimeoutMs: number;
  readonly callBoundMs: number;
  /** Longest pause between two checks of a waiter that has no wake-up yet, ms. */
  readonly pollMs: number;
  readonly ids = new Ids();
  readonly keepalive: Keepalive;
  readonly waiting: WaitingRoom;
  readonly sections = new Sections();
  readonly #wakeups: Wakeups;
  readonly shutdown: Shutdown;
  /** This process's holds by hold id, so that a re-entry joins its section's hold. */
  readonly #holds = new Map<string, Hold>();
  readonly #listeners = new Map<string, Set<ChannelListener>>();

  constructor(o: RuntimeOptions) {
    this.store = o.store;
    this.clock = o.clock;
    this.keys = o.keys;
    this.acquireTimeoutMs = o.acquireTimeoutMs;
    this.callBoundMs = o.callBoundMs;
    this.pollMs = o.pollMs;
    this.shutdown = o.shutdown;
    this.keepalive = new Keepalive(o.store, o.clock, o.shutdown.signal);
    this.waiting = new WaitingRoom({
      store: o.store, keepalive: this.keepalive, clock: o.clock, closed: o.shutdown.signal, pollMs: o.pollMs, newId: () => this.ids.id(), instance: this.ids.instance,
      callBoundMs: o.attemptBoundMs,
    });
    // The waiting room hears every channel; other listeners hear the channels they asked for.
    const handler: WakeupHandler = {
      message: (channel, message) => {
        this.waiting.message(channel, message);
        for (const listener of this.#listeners.get(channel) ?? []) listener.message(message);
      },
      missed: (channel) => {
        this.waiting.missed(channel);
        for (const listener of this.#listeners.get(channel) ?? []) listener.missed();
      },
    };
    this.#wakeups = new Wakeups(() => o.store.subscribers(), handler, o.clock, o.closeMs, o.shutdown.signal);
    this.waiting.listen(this.#wakeups);
  }

  /** Listens to `channel` on every node until `release()`; `ready` settles once subscribed (or failed). */
  listen(channel: string, listener: ChannelListener): Subscription {
    let set = this.#listeners.get(channel);
    if (!set) this.#listeners.set(channel, (set = new Set()));
    set.add(listener);
    const subscription = this.#wakeups.ref(channel);
    return {
      ready: subscription.ready,
      release: () => {
        subscription.release();
        if (set.delete(listener) && set.size === 0 && this.#listeners.get(channel) === set) this.#listeners.delete(channel);
      },
    };
  }

  /** Aborts, with a ClosedError, when close() is called. */
  get closed(): AbortSignal {
    return this.shutdown.signal;
  }

  assertOpen(): void {
    this.shutdown.assertOpen();
  }

  /** Takes the lock of `spec` on Redis: waits in the room (fresh), or enters the section's hold. */
  async obtain({ spec, wanted: w, section, reentry }: Obtain): Promise<ObtainResult> {
    const startedAt = this.clock.now();
    const ttlMs = w.leaseTimeMs ?? spec.ttlMs;
    const hold = this.ids.id();
    const call: AcquireCall = {
      target: spec.target,
      ask: {
        owner: w.owner ?? (reentry.kind === "join" ? section!.lease.owner : ownerOf(hold)),
        hold, ttlMs, mode: spec.mode, permits: w.permits,
        ticketLeaseMs: w.timeoutMs === 0 || reentry.kind !== "fresh" ? 0 : ticketLeaseMs(ttlMs),
        order: Date.now(),
      },
      entry: reentry.kind === "join" ? this.ids.id() : hold,
      reentry: reentry.kind === "fresh" && w.owner !== undefined && spec.sharesByOwner ? { kind: "owner" } : reentry,
    };
    let got: Obtained;
    for (let tries = 0; ; tries++) {
      if (reentry.kind === "fresh") {
        // After an answer that came too late (below), the next try waits only for what is left of
        // the caller's timeout: a whole new one made the call last up to twice as long (torture:
        // a 5.8 s timeout whose first answer lapsed on a stalled connection rejected after 10.1 s).
        let timeoutMs = w.timeoutMs;
        if (tries > 0 && timeoutMs > 0 && timeoutMs < Infinity) {
          timeoutMs = startedAt + w.timeoutMs - this.clock.now();
          if (timeoutMs <= 0) throw new LockTimeoutError(spec.target.keys.key, this.clock.now() - startedAt, w.timeoutMs);
        }
        const waited = this.waiting.acquire({ call, channel: spec.channel, timeoutMs, signal: w.signal });
        got = await (tries === 0 ? waited : waited.catch((error: unknown) => {
          // A later try's timeout is the caller's: it says what the caller asked for and waited.
          if (!(error instanceof LockTimeoutError)) throw error;
          throw new LockTimeoutError(error.key, this.clock.now() - startedAt, w.timeoutMs, "lock", error.cause === undefined ? undefined : { cause: error.cause });
        }));
      } else {
        const { result, sentAt } = await this.waiting.once(call, w.signal);
        if (result.status === "busy") throw new DeadlockError(spec.key, "a nested acquisition found the lock held by another hold");
        if (result.status === "gone" || result.status === "conflict") {
          if (result.status === "gone") section?.lease._hold.lose("expired", "found when re-entering");
          throw refusal(spec.key, result, call.ask.permits);
        }
        // The section's hold was lost while this re-entry was on the wire: it cannot be re-entered
        // now either (a lease on it would outlive the loss its section was told of). What this
        // call added, an entry or a nested read's hold, is given back.
        const lostMeanwhile = section?.lease._hold.lost;
        if (lostMeanwhile) {
          this.store.release(result.ref, call.entry).catch(() => {});
          throw lostMeanwhile;
        }
        got = { ref: result.ref, entry: call.entry, entered: result.status === "entered", sentAt, pttlMs: result.pttlMs, attempts: 1 };
      }
      // An answer so late that the lease is already unsafe (a paused process): give it back, try again.
      if (reentry.kind !== "fresh" || trustedUntil(got.sentAt, got.pttlMs) > this.clock.now()) break;
      await this.store.abandon(call);
    }
    const leaseHold = this.holdFor(got, call.ask.owner, ttlMs, w.leaseTimeMs === undefined, call.ask.permits);
    const lease = Lease._create(leaseHold, got.entry, this);
    if (w.leaseTimeMs !== undefined && !got.entered && got.pttlMs < ttlMs) {
      // A release granted it with what was left of our ticket's lease (3 s at most), and nobody
      // renews a fixed lease: give it its whole length once, counted from now.
      await lease.extend(ttlMs).catch(async (error: unknown) => {
        await lease.release().catch(() => {});
        throw error;
      });
    }
    return { lease, entered: got.entered, attempts: got.attempts };
  }

  /** Stores a semaphore's limit on purpose; a waiter of this process may be among those served. */
  async setPermits(target: SharedTarget, limit: number): Promise<void> {
    this.handOver(await this.store.setPermits(target, limit, this.ids.id()));
  }

  /** The hold an obtained acquisition stands on: the one this process has already, or a new one. */
  holdFor(got: Obtained, owner: string, ttlMs: number, renewing: boolean, permits: number): Hold {
    const existing = this.#holds.get(got.ref.hold);
    // A mutex that joined a multiLock's hold by owner stands on that key alone: a hold of its own here.
    // A hold being released here (its last lease left) ends with that release: a new entry stands on
    // a new Hold, which the watchdog renews.
    if (existing?.phase === "held" && existing.ref.target.family === got.ref.target.family) return existing;
    const hold = new Hold({
      ref: got.ref, owner, ttlMs, renewing, permits, clock: this.clock, confirmed: Hold.first(got.sentAt, ttlMs), pttlMs: got.pttlMs,
    });
    this.#holds.set(got.ref.hold, hold);
    this.keepalive.track(hold);
    return hold;
  }

  /** Every ticket this instance makes starts with this (Ids.id). */
  get ticketPrefix(): string {
    return this.ids.instance;
  }

  handOver(grants: readonly Grant[]): void {
    this.waiting.handOver(grants);
  }

  holdEnded(hold: Hold): void {
    if (this.#holds.get(hold.ref.hold) === hold) this.#holds.delete(hold.ref.hold);
  }

  /**
   * close()'s steps, run once by the Shutdown after its signal ended every wait (ClosedError):
   * gives back every entry this process holds (their signals abort first), lets a release on the
   * wire finish, and closes the wake-up connections. Each step is bounded.
   */
  async shutDown(): Promise<void> {
    const holds = this.keepalive.close();
    this.#holds.clear();
    await Promise.all([
      this.#wakeups.close(),
      // A release on the wire is bounded by its command timeout (or its validity): it is let finish.
      this.shutdown.drained,
      ...holds.flatMap((hold) => {
        if (hold.phase === "releasing") return [];
        const entries = hold.leases.map((lease) => lease._entry);
        hold.lose("closed", "the Surelock instance was closed while it was held");
        // Each call is bounded by its command timeout; what does not get through expires by itself.
        return entries.map((entry) => this.store.release(hold.ref, entry).catch(() => {}));
      }),
    ]);
    // Quorum mode answers at the first deciding majority: the slower nodes' calls (a release's,
    // say) finish here rather than die with the process. Each is bounded by its command timeout.
    await this.store.drain?.();
  }
}
