/**
 * Lease life over the PostgreSQL store, as the named-store engine (src/named/) takes it: an
 * acquire that waits (a ticket, the store's wake-ups, the poll bound) up to its timeout; a hold's validity on the caller's monotonic clock; a watchdog that renews every
 * renewable hold of this instance in one statement per tick; and a signal that aborts with
 * LockLostError the moment a hold can no longer be trusted (renewal refused, or no renewal
 * confirmed before the validity ran out).
 */
import { driftMs } from "../clock.js";
import { ConflictError, InvalidArgumentError, LockLostError, LockTimeoutError } from "../errors.js";
import { checkTimeout, checkTtl } from "../validate.js";
import type { PostgresStore } from "./store.js";
import type { AcquireRequest, ReleaseResult } from "./types.js";

/** A hold of this instance: what release, extend and the guard need. */
export interface PgHoldRef {
  readonly names: readonly string[];
  readonly hold: string;
  /** The first name's fencing token; `tokens` has one per name. */
  readonly token: bigint;
  readonly tokens: readonly bigint[];
}

/** A granted hold and its life. */
export interface PgHeld {
  readonly status: "founded" | "entered";
  readonly ref: PgHoldRef;
  /** Aborts with LockLostError once the hold can no longer be trusted. */
  readonly signal: AbortSignal;
  /** The monotonic instant (`performance.now()`) until which the hold is trusted, as of now. */
  heldUntil(): number;
}

export interface PgLockRequest extends Omit<AcquireRequest, "ticketMs" | "ttlMs"> {
  /** A renewed hold's lease, ms (default: the instance's `ttlMs`); the watchdog renews it every third of it. */
  readonly ttlMs?: number;
  /** A fixed lease that nobody renews; absent: `ttlMs` of the instance's watchdog, renewed each tick. */
  readonly leaseTimeMs?: number;
  /** How long to wait: 0 is one attempt, Infinity no bound. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

interface Life {
  ref: PgHoldRef;
  renewed: boolean;
  ttlMs: number;
  until: number;
  controller: AbortController;
  timer: ReturnType<typeof setTimeout> | undefined;
  entries: number;
}

export interface PostgresLocksOptions {
  /** The lease of a renewed hold, ms (default 30000); the watchdog renews every third of it. */
  readonly ttlMs?: number;
}

export class PostgresLocks {
  private readonly lives = new Map<string, Life>();
  private readonly ttlMs: number;
  private tick: ReturnType<typeof setInterval> | undefined;
  /** The tick's period, ms: a third of the shortest renewed ttl it has had to keep. */
  private tickMs = Infinity;
  private ticking = false;
  /** Watchdog ticks that sent a renewal (one statement each). */
  ticks = 0;

  constructor(readonly store: PostgresStore, options: PostgresLocksOptions = {}) {
    this.ttlMs = options.ttlMs === undefined ? 30_000 : checkTtl("options.ttlMs", options.ttlMs);
  }

  /** Acquires (or re-enters), waiting up to `timeoutMs`; rejects with LockTimeoutError, or the signal's reason. */
  async acquire(request: PgLockRequest): Promise<PgHeld> {
    const timeoutMs = checkTimeout("request.timeoutMs", request.timeoutMs);
    const fixed = request.leaseTimeMs === undefined ? undefined : checkTtl("request.leaseTimeMs", request.leaseTimeMs);
    if (request.signal !== undefined && !(request.signal instanceof AbortSignal)) throw new InvalidArgumentError("request.signal", request.signal, "an AbortSignal");
    const signal = request.signal;
    const attempt: Omit<AcquireRequest, "ttlMs" | "ticketMs"> = {
      names: request.names, hold: request.hold, owner: request.owner, mode: request.mode, reentry: request.reentry,
      ...(request.permits === undefined ? {} : { permits: request.permits }),
      ...(request.limit === undefined ? {} : { limit: request.limit }),
      ...(request.entry === undefined ? {} : { entry: request.entry }),
    };
    const ttlMs = fixed ?? (request.ttlMs === undefined ? this.ttlMs : checkTtl("request.ttlMs", request.ttlMs));
    const started = performance.now();
    const first = attempt.names[0] ?? "";
    const watch = timeoutMs > 0 ? this.store.watch(first, attempt.hold) : undefined;
    try {
      for (;;) {
        signal?.throwIfAborted();
        const left = started + timeoutMs - performance.now();
        const r = await this.store.acquire({ ...attempt, ttlMs, ticketMs: timeoutMs > 0 ? this.ticketMs(ttlMs) : 0 });
        if (r.status === "gone") throw new LockLostError(first, "expired", "the hold to re-enter is not live");
        if (r.status === "conflict") throw new ConflictError(first, `the semaphore's stored limit is ${r.limit}, not ${attempt.limit}`);
        if (r.status !== "busy") return this.held(r.status, { names: attempt.names, hold: r.hold, token: r.token, tokens: r.tokens }, r.validUntil, ttlMs, fixed === undefined);
        if (left <= 0 || !watch) throw new LockTimeoutError(first, performance.now() - started, timeoutMs);
        await watch.next(Math.min(left, r.waitMs + 5), signal);
      }
    } catch (e) {
      // Whatever the attempts left behind (a ticket; a hold whose answer was lost) is given back.
      if (timeoutMs > 0) await this.store.leave([...attempt.names], attempt.hold).catch(() => {});
      // A re-entry's entry sits on the hold it joined; a join by owner's hold is unknown (its lease bounds it).
      const target = attempt.reentry.kind === "hold" ? attempt.reentry.hold : attempt.reentry.kind === "fresh" ? attempt.hold : undefined;
      if (!(e instanceof LockTimeoutError) && target !== undefined) await this.store.release([...attempt.names], target, attempt.entry ?? attempt.hold).catch(() => {});
      throw e;
    } finally {
      watch?.close();
    }
  }

  /**
   * How long a waiter's ticket lives without a refresh: the lock's ttl (10 s at most), as on Redis,
   * so a waiter that crashed, or failed while the server was down, stops blocking those behind it
   * soon; and at least three poll bounds, since each attempt (one every poll bound at most)
   * refreshes it, so a live waiter keeps its place.
   */
  private ticketMs(ttlMs: number): number {
    return Math.max(Math.min(ttlMs, 10_000), 3 * this.store.capabilities.pollMs);
  }

  private held(status: "founded" | "entered", ref: PgHoldRef, validUntil: number, ttlMs: number, renewed: boolean): PgHeld {
    const key = `${ref.names.join("\u0000")}\u0000${ref.hold}`;
    let life = this.lives.get(key);
    if (!life) {
      life = { ref, renewed, ttlMs, until: validUntil - driftMs(ttlMs), controller: new AbortController(), timer: undefined, entries: 0 };
      this.lives.set(key, life);
    }
    life.entries++;
    this.arm(life);
    if (renewed) this.start(life.ttlMs);
    const l = life;
    return { status, ref, signal: l.controller.signal, heldUntil: () => (l.controller.signal.aborted ? 0 : l.until) };
  }

  private arm(life: Life): void {
    if (life.timer) clearTimeout(life.timer);
    life.timer = setTimeout(() => this.lose(life, "expired", "no renewal was confirmed before its validity ran out"), Math.max(0, life.until - performance.now()));
    life.timer.unref();
  }

  private lose(life: Life, reason: "expired" | "taken" | "unreachable", detail: string): void {
    if (life.timer) clearTimeout(life.timer);
    this.lives.delete(`${life.ref.names.join("\u0000")}\u0000${life.ref.hold}`);
    if (!life.controller.signal.aborted) life.controller.abort(new LockLostError(life.ref.names[0]!, reason, detail));
  }

  private start(ttlMs: number): void {
    const period = Math.max(10, Math.floor(ttlMs / 3));
    if (this.tick && period >= this.tickMs) return;
    // A hold with a shorter ttl than any before it: the tick must come often enough for it too.
    if (this.tick) clearInterval(this.tick);
    this.tickMs = period;
    this.tick = setInterval(() => void this.renewAll(), period);
    this.tick.unref();
  }

  /** One renewal statement for every renewed hold of this instance. */
  async renewAll(): Promise<void> {
    if (this.ticking) return;
    const lives = [...this.lives.values()].filter((l) => l.renewed);
    if (lives.length === 0) {
      if (this.tick) clearInterval(this.tick);
      this.tick = undefined;
      this.tickMs = Infinity;
      return;
    }
    this.ticking = true;
    try {
      this.ticks++;
      const answers = await this.store.renew(lives.map((l) => ({ kind: "hold" as const, names: l.ref.names, id: l.ref.hold, ttlMs: l.ttlMs })));
      answers.forEach((a, i) => {
        const life = lives[i]!;
        if (life.controller.signal.aborted) return;
        if (!a.live) return this.lose(life, "expired", "the database no longer had it live at renewal");
        life.until = Math.max(life.until, a.validUntil - driftMs(life.ttlMs));
        this.arm(life);
      });
    } catch {
      // Unconfirmed: each hold stays trusted until its own validity runs out (its timer), and the next tick tries again.
    } finally {
      this.ticking = false;
    }
  }

  /** Gives one entry back; the hold's signal stops with its last entry. */
  async release(held: PgHeld, entry?: string): Promise<ReleaseResult> {
    const key = `${held.ref.names.join("\u0000")}\u0000${held.ref.hold}`;
    const life = this.lives.get(key);
    const r = await this.store.release(held.ref.names, held.ref.hold, entry);
    if (life && (r.status !== "held" || --life.entries <= 0)) {
      if (life.timer) clearTimeout(life.timer);
      this.lives.delete(key);
    }
    return r;
  }

  /** Renews one hold now for `ttlMs`; the new held-until instant (LockLostError when it is gone). */
  async extend(held: PgHeld, ttlMs: number): Promise<number> {
    checkTtl("ttlMs", ttlMs);
    const key = `${held.ref.names.join("\u0000")}\u0000${held.ref.hold}`;
    const sent = performance.now();
    const r = await this.store.extend(held.ref.names, held.ref.hold, ttlMs);
    const life = this.lives.get(key);
    if (!r.live) {
      if (life) this.lose(life, "expired", "extend found it gone");
      throw new LockLostError(held.ref.names[0]!, "expired", "extend found it gone");
    }
    if (life) {
      // The newest confirmation sets validity, also when it shortens it (docs/protocol.md, ordering rule).
      life.until = Math.max(sent, r.validUntil - driftMs(ttlMs));
      life.ttlMs = ttlMs;
      this.arm(life);
      if (life.renewed) this.start(ttlMs);
    }
    return held.heldUntil();
  }

  /** Stops the watchdog and forgets every hold (they run out in the database). */
  close(): void {
    if (this.tick) clearInterval(this.tick);
    this.tick = undefined;
    this.tickMs = Infinity;
    for (const life of this.lives.values()) if (life.timer) clearTimeout(life.timer);
    this.lives.clear();
  }
}
