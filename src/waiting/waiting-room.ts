/**
 * The waiting room: how an acquire waits. The first attempt needs no subscription (the
 * uncontended path is one round trip). A busy lock puts the caller's ticket in the lock's queue;
 * then the caller listens on the lock's channel and on this instance's own part of it (where its
 * grants and turns are told, so no other process wakes), and is served by the release itself: in
 * single-node mode the release founds the head's hold and announces the grant, in quorum mode it
 * announces whose turn it is. A grant made by a release in this process is handed over at once.
 * The watchdog refreshes every waiting ticket (a ticket that stops being refreshed lapses), and a
 * refresh also reports a grant whose announcement was lost. Every wait ends at the first of its
 * outcome, its timeout, its signal and close(); a wait that ends otherwise gives its ticket — and
 * whatever its attempts may have obtained meanwhile — back. How an answer reads as a hold is in
 * obtained.ts, what ends a call in stop.ts.
 */
import type { Clock } from "../clock.js";
import { trustedUntil } from "../clock.js";
import { boundedBy } from "../deadline.js";
import { publish } from "../diagnostics.js";
import { ConflictError, ConnectionError, LockTimeoutError, QuorumError } from "../errors.js";
import type { Keepalive } from "../lease/keepalive.js";
import { decodeMessage, inboxOf } from "../protocol/channel.js";
import type { AcquireCall, AcquireResult, Grant, Store } from "../store/types.js";
import { granted, obtained, type Obtained } from "./obtained.js";
import { attemptStop, closedOnly, waitStop, type Stop } from "./stop.js";
import { Waiter } from "./waiter.js";
import type { Wakeups, WakeupHandler } from "./wakeups.js";

export interface WaitRequest {
  readonly call: AcquireCall;
  /** The lock's wake-up channel; a multi-key lock's waiter hears each of its keys'. */
  readonly channel: string | readonly string[];
  /** 0: one attempt, no ticket; Infinity: no bound. */
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

/**
 * How long a ticket stays in line without a refresh: the lock's ttl, within 60 ms … 3 s. A dead
 * or paused waiter holds the others back, and a grant made to it costs, no longer than that.
 */
export const ticketLeaseMs = (ttlMs: number): number => Math.min(3_000, Math.max(60, ttlMs));

export class WaitingRoom implements WakeupHandler {
  readonly #store: Store;
  readonly #keepalive: Keepalive;
  readonly #clock: Clock;
  readonly #closed: AbortSignal;
  readonly #pollMs: number;
  /** The longest a store call takes before it settles by itself (Runtime.callBoundMs). */
  readonly #callBoundMs: number;
  #wakeups: Wakeups | undefined;
  readonly #waiters = new Map<string, Waiter>();
  readonly #byChannel = new Map<string, Set<Waiter>>();

  readonly #newId: () => string;
  readonly #instance: string;

  /**
   * `instance`: the prefix of `newId`'s ids, which names this room's own part of each lock channel.
   * `callBoundMs`: the longest a store call takes before it settles by itself (Infinity: unknown).
   */
  constructor(o: {
    store: Store; keepalive: Keepalive; clock: Clock; closed: AbortSignal; pollMs: number; newId: () => string; instance: string;
    callBoundMs?: number;
  }) {
    this.#callBoundMs = o.callBoundMs ?? Infinity;
    this.#newId = o.newId;
    this.#instance = o.instance;
    this.#store = o.store;
    this.#keepalive = o.keepalive;
    this.#clock = o.clock;
    this.#closed = o.closed;
    this.#pollMs = o.pollMs;
  }

  /** Set once: the subscriptions deliver to this room. */
  listen(wakeups: Wakeups): void {
    this.#wakeups = wakeups;
  }

  /** One attempt with no waiting and no ticket (re-entries, joins), bounded by `signal` and close(). */
  async once(call: AcquireCall, signal: AbortSignal | undefined): Promise<{ result: AcquireResult; sentAt: number }> {
    const stop = attemptStop(this.#clock, this.#closed, signal);
    let sent = false;
    try {
      stop.throwIfInterrupted();
      sent = true;
      const sentAt = this.#clock.now();
      return { result: await this.#attempt(call, stop), sentAt };
    } catch (error) {
      // Interrupted, or its answer lost: the entry it may have added is given back (none if it was never sent).
      if (sent) this.#abandon(call);
      throw error;
    } finally {
      stop.dispose();
    }
  }

  acquire(req: WaitRequest): Promise<Obtained> {
    // The usual acquire first, in a small function of its own (a suspended async function keeps
    // all its locals, and the wait below has many): no signal of its own and a timeout no
    // shorter than a store call's own bound, so only close() can end its first attempt early,
    // and nobody here listening to the lock already.
    const lockChannel = typeof req.channel === "string" ? req.channel : req.channel[0];
    if (req.signal === undefined && req.timeoutMs > 0 && req.timeoutMs >= this.#callBoundMs
      && !(lockChannel !== undefined && this.#wakeups?.listens(lockChannel))) return this.#firstThenWait(req);
    return this.#wait(req, undefined);
  }

  /** The first attempt of an acquire with nothing set up for it; it waits (#wait) only if the lock is busy. */
  async #firstThenWait(req: WaitRequest): Promise<Obtained> {
    const startedAt = this.#clock.now();
    const stop = closedOnly(this.#closed);
    // Interrupted before it was sent: nothing to give back.
    stop.throwIfInterrupted();
    const firstAt = this.#clock.now();
    let first: AcquireResult;
    let got: Obtained | undefined;
    try {
      first = await this.#attempt(req.call, stop);
      got = obtained(req.call, first, firstAt, 1);
    } catch (error) {
      // Whatever the attempt took (its answer lost, or after close()) is given back; a refusal took nothing.
      if (!(error instanceof ConflictError)) this.#abandon(req.call);
      throw error;
    }
    return got ?? this.#wait(req, { first, firstAt, startedAt });
  }

  /**
   * An acquire's wait; `prior`: its first attempt, already made by #firstThenWait, which found
   * the lock busy.
   */
  async #wait(req: WaitRequest, prior: { first: AcquireResult; firstAt: number; startedAt: number } | undefined): Promise<Obtained> {
    const startedAt = prior?.startedAt ?? this.#clock.now();
    const key = req.call.target.keys.key;
    /** This wait's attempt: a new identity after a grant was given back. */
    let call = req.call;
    /** What it listens to once it waits: worked out when first needed (an uncontended acquire never is). */
    let listensTo: readonly string[] | undefined;
    const channels = (): readonly string[] => (listensTo ??= this.#channelsOf(req));
    let waiter: Waiter | undefined;
    /** Some attempt of this wait was answered: Redis was there. */
    let answered = false;
    // At the timeout, an outage must not read as contention: the timeout's cause says Redis did not answer.
    const unanswered = (): Error | undefined => waiter?.unanswered ?? (answered ? undefined
      : new ConnectionError(`no reply from Redis to the attempt on "${key}" within the acquire's timeout (${req.timeoutMs} ms)`));
    const bounds = { clock: this.#clock, closed: this.#closed, key, startedAt, timeoutMs: req.timeoutMs, signal: req.signal, unanswered };
    // With no signal of its own and a timeout no shorter than a store call's own bound, only
    // close() can end the first attempt early: its wait's interruption (an AbortController, a
    // timer, listeners) is made only once it has to wait, and keeps the wait's deadline.
    const lazy = req.signal === undefined && req.timeoutMs >= this.#callBoundMs;
    let stop = lazy ? closedOnly(this.#closed) : waitStop(bounds);
    let subscription: { release(): void } | undefined;
    let attempts = 0;
    let waited = false;
    /** Interrupted before its first attempt was sent: nothing to give back, nothing to send. */
    let sent = false;
    let outcome: "acquired" | "timeout" | "aborted" | "error" = "error";
    try {
      let first: AcquireResult;
      let firstAt: number;
      let listened = false;
      if (prior) {
        ({ first, firstAt } = prior);
        sent = true;
        answered = true;
        attempts++;
      } else {
        stop.throwIfInterrupted();
        sent = true;
        // Already listening to this lock (other waiters here): keep listening through the attempt,
        // so that an announcement made after it cannot be missed and no second attempt is needed.
        // (Looked up by the lock's own channel first: most acquires find nobody listening to it.)
        const lockChannel = typeof req.channel === "string" ? req.channel : req.channel[0];
        subscription = req.timeoutMs === 0 || lockChannel === undefined || !this.#wakeups?.listens(lockChannel)
          ? undefined
          : this.#wakeups.refIfListeningAll(channels());
        listened = subscription !== undefined;
        // Listening already: the waiter must be findable by an announcement that beats the reply.
        if (listened) waiter = this.#enter(req.call, channels(), startedAt);
        firstAt = this.#clock.now();
        first = await this.#attempt(call, stop);
        answered = true;
        attempts++;
        const got = obtained(call, first, firstAt, attempts);
        if (got) return got;
        if (req.timeoutMs === 0) throw new LockTimeoutError(key, this.#clock.now() - startedAt, 0);
      }

      if (lazy) stop = waitStop(bounds);
      waiter ??= this.#enter(call, channels(), startedAt);
      this.#note(waiter, first, firstAt);
      waited = true;
      publish("wait", () => ({ key, phase: "start", waitedMs: this.#clock.now() - startedAt }));
      if (this.#wakeups && !listened) {
        const s = this.#wakeups.refAll(channels());
        subscription = s;
        // A subscription that takes long (a node down, an adapter that never confirms) only costs
        // latency: the ticket's refresh reports a grant all the same. So the wait for it is bounded.
        await stop.race(boundedBy(this.#clock, waiter.periodMs, s.ready));
      }
      // Ask once more if we were not listening yet: a grant made before the subscription took went unheard.
      let attemptNow = !listened;
      for (;;) {
        if (attemptNow) {
          let again: AcquireResult;
          const againAt = this.#clock.now();
          try {
            again = await this.#attempt(call, stop);
          } catch (error) {
            // Redis does not answer a waiter: the wait goes on, bounded by its own timeout (whose
            // cause this becomes). The ticket's refresh tells when Redis answers again, and then
            // the waiter attempts again (the same identity: an attempt that did land is replayed).
            if (stop.signal.aborted || !(error instanceof ConnectionError || error instanceof QuorumError)) throw error;
            waiter.unreachable(error);
            attemptNow = false;
            continue;
          }
          waiter.answered();
          attempts++;
          const got = obtained(call, again, againAt, attempts);
          if (got) {
            outcome = "acquired";
            return got;
          }
          this.#note(waiter, again, againAt);
        }
        const event = await waiter.next(stop.signal);
        const grant = event.kind === "granted" ? granted(waiter, event, attempts) : undefined;
        if (grant && trustedUntil(grant.sentAt, grant.pttlMs) > this.#clock.now()) {
          outcome = "acquired";
          return grant;
        }
        if (grant) {
          // Granted so late (this process was paused) that the hold is already unsafe: give it back,
          // and wait on under a new identity, so that nothing said about the old one (a refresh
          // reporting that grant, a late give-back) can be mistaken for the new one's.
          await stop.race(this.#store.abandon(call));
          this.#leave(waiter);
          const hold = this.#newId();
          call = { ...call, ask: { ...call.ask, hold }, entry: hold };
          waiter = this.#enter(call, channels(), startedAt);
        }
        attemptNow = true;
      }
    } catch (error) {
      if (error instanceof LockTimeoutError) outcome = "timeout";
      else if (req.signal?.aborted && error === req.signal.reason) outcome = "aborted";
      // Whatever an attempt of ours took or queued — its answer lost, or arriving after we stopped
      // listening — is given back: the ticket leaves the line, a hold founded for it is released.
      // (A single attempt that found the lock busy took nothing; a conflict took nothing either.)
      const tookNothing = !sent || (req.timeoutMs === 0 && error instanceof LockTimeoutError) || error instanceof ConflictError;
      if (!tookNothing) this.#abandon(call);
      throw error;
    } finally {
      stop.dispose();
      subscription?.release();
      if (waiter) {
        this.#leave(waiter);
        if (waited) publish("wait", () => ({ key, phase: "end", outcome, waitedMs: this.#clock.now() - startedAt }));
      }
    }
  }

  /** Grants made by a release in this process: a waiter here may be the one served. */
  handOver(grants: readonly Grant[]): void {
    for (const grant of grants) this.#waiters.get(grant.ticket)?.push({ kind: "granted", token: grant.token, pttlMs: grant.pttlMs });
  }

  /** A message on a lock's channel (src/protocol/channel.ts). */
  message(channel: string, message: string): void {
    const m = decodeMessage(message);
    if (m.kind === "granted") {
      this.#waiters.get(m.ticket)?.push({ kind: "granted", token: m.token, pttlMs: m.pttlMs });
    } else if (m.kind === "turn") {
      this.#waiters.get(m.ticket)?.push({ kind: "turn" });
    } else if (m.kind === "everyone") {
      this.missed(channel);
    }
    // "watch": for those who watch who holds the lock (a new leader, a vacancy): nobody's turn.
  }

  missed(channel: string): void {
    for (const waiter of this.#byChannel.get(channel) ?? []) waiter.push({ kind: "turn" });
  }

  /** One attempt (its send instant is read just before: `sentAt`); not an async function, one promise fewer. */
  #attempt(call: AcquireCall, stop: Stop): Promise<AcquireResult> {
    stop.throwIfInterrupted();
    return stop.race(this.#store.acquire(call, stop.signal));
  }

  #note(waiter: Waiter, result: AcquireResult, sentAt: number): void {
    if (result.status !== "busy") return;
    if (result.position >= 0) waiter.queued(sentAt, result.position, result.waitMs, result.counter);
    // Not queued (quorum mode): look again when the lock could be free, or after a split vote's pause.
    else waiter.dueAt = Math.min(waiter.dueAt, sentAt + result.waitMs + 1);
    // The watchdog refreshes the ticket at its (possibly earlier) due time.
    this.#keepalive.addTicket(waiter);
  }

  /** A waiter for `call`, findable by its ticket and its channels (its ticket is refreshed once it is queued: see #note). */
  #enter(call: AcquireCall, channels: readonly string[], startedAt: number): Waiter {
    const periodMs = Math.min(this.#pollMs, Math.floor(call.ask.ticketLeaseMs / 3));
    const waiter = new Waiter(call, channels, periodMs, this.#clock.now());
    const key = call.target.keys.key;
    waiter.onReachability = (error) => publish("wait", () => ({
      key, phase: error ? "unreachable" : "reachable", waitedMs: this.#clock.now() - startedAt, ...(error && { error }),
    }));
    this.#waiters.set(waiter.ticket, waiter);
    for (const channel of waiter.channels) {
      let set = this.#byChannel.get(channel);
      if (!set) this.#byChannel.set(channel, (set = new Set()));
      set.add(waiter);
    }
    return waiter;
  }

  #leave(waiter: Waiter): void {
    this.#waiters.delete(waiter.ticket);
    for (const channel of waiter.channels) {
      const set = this.#byChannel.get(channel);
      set?.delete(waiter);
      if (set?.size === 0) this.#byChannel.delete(channel);
    }
    this.#keepalive.removeTicket(waiter);
  }

  /**
   * What a waiter listens to: each lock channel (a force-release's "*"), and this instance's own
   * part of it, where its grants and turns are told.
   */
  #channelsOf(req: WaitRequest): readonly string[] {
    const channels = typeof req.channel === "string" ? [req.channel] : req.channel;
    return channels.flatMap((c) => [c, inboxOf(c, this.#instance)]);
  }

  #abandon(call: AcquireCall): void {
    this.#store.abandon(call).catch((error: unknown) => {
      // The ticket lapses, and a hold founded for it expires, by themselves.
      publish("error", () => ({ key: call.target.keys.key, operation: "leave-queue", error: error as Error }));
    });
  }
}
