/**
 * A clock and timer source whose time moves only when a test says so. Timers fire in order of
 * their due instant (ties in the order they were set); between two timers the in-memory
 * network settles (pending replies and messages are delivered, and the promise chains they
 * start run), so a test sees the same interleaving on every run.
 */
import { InvalidArgumentError } from "../index.js";
import { settle } from "./activity.js";

/** What surelock's runtime needs to measure time and wait: the shape of `{ performance.now, setTimeout, clearTimeout }`. */
export interface TimerSource {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** A pending timer; has Node's ref/unref so code written for Node timers runs unchanged. */
export class VirtualTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  constructor(at: number, seq: number, fn: () => void) {
    this.at = at;
    this.seq = seq;
    this.fn = fn;
  }
  /** As Node's: nothing to do, a virtual timer never keeps the process alive. */
  ref(): this { return this; }
  /** As Node's. */
  unref(): this { return this; }
  /** As Node's. */
  hasRef(): boolean { return true; }
}

export class VirtualClock implements TimerSource {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<VirtualTimer>();
  #advancing = false;
  /** @param startMs what `now()` reads before any `advance` (default 0). */
  constructor(startMs = 0) {
    if (typeof startMs !== "number" || !Number.isFinite(startMs)) throw new InvalidArgumentError("startMs", startMs, "a finite number of ms");
    this.#now = startMs;
  }

  /** The virtual time, in ms. */
  now(): number { return this.#now; }

  setTimeout(fn: () => void, ms: number): VirtualTimer {
    // Like Node: a negative, NaN or missing delay means "as soon as possible".
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer = new VirtualTimer(this.#now + delay, ++this.#seq, fn);
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle instanceof VirtualTimer) this.#timers.delete(handle);
  }

  /** Timers not yet fired. */
  get pendingTimers(): number { return this.#timers.size; }

  /** When the next timer is due, or undefined. */
  get nextTimerAt(): number | undefined { return this.#next()?.at; }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in order, with the
   * clock reading each timer's due instant while it runs; the network settles after each.
   * A timer callback that throws rejects the returned promise (later timers stay pending).
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0 && ms !== Infinity)) throw new InvalidArgumentError("ms", ms, "a finite number of ms >= 0");
    if (this.#advancing) throw new Error("VirtualClock.advance: already advancing (await the previous call)");
    this.#advancing = true;
    try {
      const target = this.#now + ms;
      await settle();
      for (let timer = this.#next(); timer && timer.at <= target; timer = this.#next()) {
        this.#timers.delete(timer);
        this.#now = Math.max(this.#now, timer.at);
        timer.fn();
        await settle();
      }
      this.#now = target;
    } finally {
      this.#advancing = false;
    }
  }

  /** Fires timers (moving time to each) until none is left; fails after `maxTimers` (a timer that re-arms forever). */
  async runUntilIdle(maxTimers = 10_000): Promise<void> {
    await settle();
    for (let fired = 0; ; fired++) {
      const next = this.#next();
      if (!next) return;
      if (fired >= maxTimers) throw new Error(`VirtualClock.runUntilIdle: still busy after ${maxTimers} timers (something re-arms a timer forever)`);
      await this.advance(next.at - this.#now);
    }
  }

  /** Lets pending in-memory replies and messages arrive without moving time. */
  settle(): Promise<void> { return settle(); }

  #next(): VirtualTimer | undefined {
    let best: VirtualTimer | undefined;
    for (const t of this.#timers) {
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
