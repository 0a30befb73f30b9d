/**
 * A countdown latch (Java's CountDownLatch, Redisson's RCountDownLatch): it opens once `count`
 * count downs were made, from any processes, and `wait()` resolves then. One hash per latch with
 * a TTL that every count down renews; each count down carries an id, so a replayed one counts once.
 */
import { Interruption, pause, race } from "../deadline.js";
import { publish } from "../diagnostics.js";
import { ConflictError, LockTimeoutError } from "../errors.js";
import type { LatchKeys } from "../keys.js";
import type { LatchOps } from "../engine.js";
import type { Runtime } from "../runtime.js";
import type { LatchReply } from "../store/types.js";
import { checkOptions, checkOwner, checkSignal, checkTimeout } from "../validate.js";

/** Options of `Surelock.latch()`. */
export interface LatchOptions {
  /** How many count downs open it (required), 1 … 1 000 000; stored with it: every caller must agree. */
  readonly count: number;
  /**
   * How long Redis keeps the latch after its last count down, ms (default 3 600 000, 1 h). Once it
   * has expired, a latch is new again: choose a ttl longer than the longest gap between count
   * downs, and than the time an open latch must stay open.
   */
  readonly ttl?: number;
}

/** Options of `CountDownLatch.countDown()`. */
export interface CountDownOptions {
  /**
   * Names this count down: calls with the same id count once, so a call that failed may be made
   * again safely. Default: a new id per call (a replay by the client still counts once).
   */
  readonly id?: string;
}

/** Options of `CountDownLatch.wait()`. */
export interface LatchWaitOptions {
  /** Longest wait in ms; 0 means one look. Default: until the latch opens or `signal` aborts. */
  readonly timeout?: number;
  /** Gives up the wait; it rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

export type { LatchOps } from "../engine.js";

const INTERNAL = Symbol("surelock.latch");


export class CountDownLatch {
  /** The latch's name. */
  readonly key: string;
  /** The count it opens at. */
  readonly initialCount: number;
  /** How long Redis keeps it after its last count down, ms. */
  readonly ttl: number;
  readonly #ops: LatchOps;

  private constructor(token: typeof INTERNAL, ops: LatchOps | Runtime, key: string, count: number, ttlMs: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.latch()");
    this.key = key;
    this.initialCount = count;
    this.ttl = ttlMs;
    this.#ops = "store" in ops ? redisLatch(ops, key, count, ttlMs) : ops;
  }

  /** @internal Use `Surelock.latch()`. */
  static _create(rt: Runtime, key: string, count: number, ttlMs: number): CountDownLatch {
    return new CountDownLatch(INTERNAL, rt, key, count, ttlMs);
  }

  /** @internal A latch on another store than Redis. Use `Surelock.latch()`. */
  static _createOn(ops: LatchOps, key: string, count: number, ttlMs: number): CountDownLatch {
    return new CountDownLatch(INTERNAL, ops, key, count, ttlMs);
  }

  /**
   * Counts down once (nothing once it is open) and renews the latch's TTL; resolves with what is
   * left. The one that reaches 0 wakes every waiter. A call that rejects with ConnectionError may
   * have counted: pass an `id` to make it again safely.
   */
  async countDown(options?: CountDownOptions): Promise<number> {
    const o = checkOptions<CountDownOptions>("options", options, ["id"]);
    const id = o.id === undefined ? this.#ops.newId() : checkOwner("options.id", o.id);
    this.#ops.assertOpen();
    const { left, counted } = await this.#ops.countDown(id);
    publish("latch", () => ({ key: this.key, event: "countDown", count: left, counted }));
    return left;
  }

  /** What is left of the count, read from Redis (the count itself for a latch Redis does not have). */
  async count(): Promise<number> {
    this.#ops.assertOpen();
    return this.#ops.read();
  }

  /**
   * Resolves once the latch is open (its count is 0): at once if it is, else when the count down
   * that opens it announces it (pub/sub), with a look at least every `pollInterval` in case that
   * announcement is lost. Rejects with LockTimeoutError after `timeout`, with the signal's reason
   * when it aborts, ClosedError when the Surelock is closed.
   */
  async wait(options?: LatchWaitOptions): Promise<void> {
    const o = checkOptions<LatchWaitOptions>("options", options, ["timeout", "signal"]);
    const timeoutMs = o.timeout === undefined ? Infinity : checkTimeout("options.timeout", o.timeout);
    const signal = o.signal === undefined ? undefined : checkSignal("options.signal", o.signal);
    const rt = this.#ops;
    rt.assertOpen();
    const startedAt = rt.clock.now();
    const stop = new Interruption({
      clock: rt.clock,
      // `timeout: 0` is one look: bounded by its command timeout, not cut short.
      deadlineAt: timeoutMs === 0 || timeoutMs === Infinity ? Infinity : startedAt + timeoutMs,
      timeout: () => new LockTimeoutError(this.key, rt.clock.now() - startedAt, timeoutMs, "latch"),
      signals: [signal, rt.closed],
    });
    let poked = false;
    let wake: (() => void) | undefined;
    const poke = (): void => {
      poked = true;
      wake?.();
    };
    let subscription: { release(): void } | undefined;
    try {
      // The uncontended case (open already, or one look) needs no subscription.
      if ((await race(rt.read(), stop.signal)) === 0) return this.#opened(startedAt);
      if (timeoutMs === 0) throw new LockTimeoutError(this.key, rt.clock.now() - startedAt, 0, "latch");
      const s = rt.listen(poke);
      subscription = s;
      await race(s.ready, stop.signal);
      for (let looks = 0; ; looks++) {
        // Look again now that we listen (an announcement made before we did went unheard), after
        // each announcement, and at least every pollInterval.
        poked = false;
        const left = await race(rt.read(), stop.signal);
        if (left === 0) return this.#opened(startedAt);
        if (looks === 0) publish("latch", () => ({ key: this.key, event: "waiting", count: left }));
        if (!poked) await this.#nextPoke(stop.signal, (w) => { wake = w; });
        wake = undefined;
        stop.throwIfInterrupted();
      }
    } finally {
      subscription?.release();
      stop.dispose();
    }
  }

  #opened(startedAt: number): void {
    publish("latch", () => ({ key: this.key, event: "open", count: 0, waitedMs: this.#ops.clock.now() - startedAt }));
  }

  /** Resolves at the next announcement, after pollInterval, or when `stop` aborts. */
  #nextPoke(stop: AbortSignal, setWake: (wake: () => void) => void): Promise<void> {
    return pause(this.#ops.clock, this.#ops.pollMs, stop, setWake);
  }
}

/** A latch on Redis: one hash per latch, counted down by a script on every node, opened on its channel. */
function redisLatch(rt: Runtime, key: string, initialCount: number, ttl: number): LatchOps {
  const keys: LatchKeys = rt.keys.latch(key);
  const latch = { name: key, keys, count: initialCount };
  /** What is left; a latch stored with another count is a conflict. */
  const left = (reply: LatchReply): number => {
    if (reply.status === "conflict") {
      throw new ConflictError(key, `a latch of count ${reply.count} is stored under this name, and this caller asked for ` +
        `${initialCount}: every caller of one latch must agree`);
    }
    return reply.left;
  };
  return {
    clock: rt.clock,
    get closed() { return rt.closed; },
    pollMs: rt.pollMs,
    assertOpen: () => rt.assertOpen(),
    newId: () => rt.ids.id(),
    async countDown(id) {
      const reply = await rt.store.countDown({ ...latch, id, ttlMs: ttl });
      return { left: left(reply), counted: reply.status === "counted" };
    },
    async read() {
      return left(await rt.store.readLatch(latch));
    },
    listen: (poke) => rt.listen(keys.channel, { message: poke, missed: poke }),
  };
}
