/**
 * The Lease: the handle of one entry of a hold. Release it once (a second release is a no-op;
 * `await using` does it for you). `signal` aborts with a LockLostError the moment the hold can no
 * longer be trusted. Every method settles by its own outcome, its command timeout, or the hold's
 * validity, whichever comes first.
 */
import type { Clock } from "../clock.js";
import { race, type Shutdown } from "../deadline.js";
import { listened, publish } from "../diagnostics.js";
import { ConnectionError, LockLostError, LockNotHeldError } from "../errors.js";
import type { Grant, HoldState, ReleaseResult, Store } from "../store/types.js";
import { checkTtl } from "../validate.js";
import type { Hold } from "./hold.js";
import type { Keepalive } from "./keepalive.js";

/** The store calls a lease makes: renew (extend), check (isHeld) and release. */
export type LeaseStore = Pick<Store, "keepalive" | "check" | "release">;

/** The watchdog, as a lease tells it of its hold (a store that renews by itself ignores it). */
export type LeaseWatchdog = Pick<Keepalive, "confirmed" | "stopRenewing" | "forget">;

/** What a lease needs from the Surelock it came from. */
export interface LeaseRuntime {
  readonly store: LeaseStore;
  readonly keepalive: LeaseWatchdog;
  readonly clock: Clock;
  /** The longest a store call can take before it settles by itself (its command timeouts and retries). */
  readonly callBoundMs: number;
  /** The id prefix of this instance's tickets: a release's grant to one of them is handed over here. */
  readonly ticketPrefix: string;
  /** The instance's close: a release on the wire is counted in it, so that close() lets it finish. */
  readonly shutdown: Pick<Shutdown, "begin" | "end">;
  /** Grants a release made: a waiter of this process may be the one served. */
  handOver(grants: readonly Grant[]): void;
  /** The last lease of this process on `hold` is done. */
  holdEnded(hold: Hold): void;
}

const INTERNAL = Symbol("surelock.lease");

const HELD = 0;
const RELEASED = 1;
const LOST_WHILE_HELD = 2;

/**
 * The handle of one acquisition (one entry of a hold): its key, fencing token and owner, a signal
 * that aborts when it can no longer be trusted, and release / extend / isHeld. Made by `acquire()`,
 * `tryAcquire()` and `withLock()`; `await using` releases it.
 */
export class Lease implements AsyncDisposable {
  /** @internal The entry of the hold this lease stands for. */
  readonly _entry: string;
  readonly #hold: Hold;
  readonly #rt: LeaseRuntime;
  /** Made on first use of `fencingTokens` (most callers read `fencingToken`). */
  #fencingTokens: ReadonlyMap<string, bigint> | undefined;
  /** Made on first use of `signal` (many callers never look at it). */
  #controller: AbortController | undefined;
  /** Whole ms, so that it is kept in the lease itself rather than in a number of its own. */
  readonly #acquiredAt: number;
  /**
   * HELD; RELEASED; or LOST_WHILE_HELD: the hold was lost before this lease's release settled, so
   * its signal aborts even though it was released.
   */
  #state = HELD;
  #releasing: Promise<void> | undefined;

  private constructor(token: typeof INTERNAL, hold: Hold, entry: string, rt: LeaseRuntime) {
    if (token !== INTERNAL) throw new TypeError("a Lease is made by acquire(), tryAcquire() or withLock()");
    this.#hold = hold;
    this.#rt = rt;
    this.#acquiredAt = Math.floor(rt.clock.now());
    this._entry = entry;
    hold.enter(this);
  }

  /** @internal A lease on `hold` for the entry `entry`. */
  static _create(hold: Hold, entry: string, rt: LeaseRuntime): Lease {
    return new Lease(INTERNAL, hold, entry, rt);
  }

  /** The user's key, as given. */
  get key(): string {
    return this.#hold.key;
  }

  /**
   * Fencing token: strictly increasing for each new acquisition of the key; the same for re-entries.
   * A multiLock's lease: its first key's (see `fencingTokens`).
   */
  get fencingToken(): bigint {
    return this.#hold.token;
  }

  /** The owner the lock is held as (shared by re-entries and by an explicit `owner`). */
  get owner(): string {
    return this.#hold.owner;
  }

  /** How many permits of a semaphore it holds (given back together by `release()`); 1 for other locks. */
  get permits(): number {
    return this.#hold.permits;
  }

  /**
   * Each key's fencing token: the one key of a mutex or another lock (the same as `fencingToken`);
   * every key of a multiLock, in the order given, each strictly increasing for its key.
   */
  get fencingTokens(): ReadonlyMap<string, bigint> {
    if (!this.#fencingTokens) {
      const { ref } = this.#hold;
      this.#fencingTokens = new Map(ref.target.family === "multi"
        ? ref.target.keys.each.map((k, i) => [k.key, ref.tokens?.[i] ?? 0n] as const)
        : [[this.key, this.fencingToken] as const]);
    }
    return this.#fencingTokens;
  }

  /** @internal The hold was lost: abort the signal, unless this lease was released first. */
  _lost(error: LockLostError): void {
    if (this.#state !== HELD) return;
    this.#controller?.abort(error);
    // close() gives the entry back: for whoever follows holds on the channels, that is its release.
    if (error.reason === "closed") this.#announceRelease();
  }

  /** Aborts (with a LockLostError as reason) as soon as the lease can no longer be trusted. */
  get signal(): AbortSignal {
    if (this.#state === HELD) this.#hold.checkValidity();
    if (!this.#controller) {
      this.#controller = new AbortController();
      // Lost before anyone looked (and not released first): the signal starts aborted.
      const lost = this.#hold.lost;
      if (lost && this.#state !== RELEASED) this.#controller.abort(lost);
    }
    return this.#controller.signal;
  }

  /** Local view: acquired, not released, not known to be lost, validity not run out. */
  get held(): boolean {
    if (this.#state !== HELD) return false;
    this.#hold.checkValidity();
    return !this.#hold.lost;
  }

  /** @internal The hold this lease stands on. */
  get _hold(): Hold {
    return this.#hold;
  }

  /**
   * Renews the lease now, for `ttl` ms (default: its current ttl), which the watchdog then keeps
   * using. Rejects with LockLostError if it is no longer held (also when it was lost while the call
   * was on the wire), LockNotHeldError after release.
   */
  async extend(ttl?: number): Promise<void> {
    const ttlMs = ttl === undefined ? this.#hold.ttlMs : checkTtl("ttl", ttl);
    const hold = this.#hold;
    if (this.#state !== HELD) throw new LockNotHeldError(this.key, "the lease was already released");
    hold.checkValidity();
    if (hold.lost) throw hold.lost;
    const sent = hold.beginExtend(ttlMs);
    this.#rt.keepalive.confirmed(hold);
    // It may shorten the key's life too (a hold of one entry): a fixed lease cut short frees the lock then.
    const [state] = await race(this.#rt.store.keepalive([{ kind: "renew", ref: hold.ref, ttlMs, shorten: true }]), hold.lostSignal,
      (late) => this.#prolongedForNobody(late[0] as HoldState)).finally(() => { hold.callSettled(); });
    if (hold.lost) {
      this.#prolongedForNobody(state as HoldState);
      throw hold.lost;
    }
    if (state !== "held") throw hold.lose(state === "taken" ? "taken" : "expired", "found on extend");
    hold.confirm(sent);
    this.#rt.keepalive.confirmed(hold);
    publish("extend", () => ({ key: this.key, fencingToken: this.fencingToken, ttl: ttlMs, automatic: false }));
  }

  /** Asks Redis whether this lease's hold still holds the lock. A "no" also aborts `signal`. */
  async isHeld(): Promise<boolean> {
    const hold = this.#hold;
    if (this.#state !== HELD || hold.lost) return false;
    const state = await race(this.#rt.store.check(hold.ref), hold.lostSignal).catch((error: unknown) => {
      if (error instanceof LockLostError) return "gone" as const;
      throw error;
    });
    if (state === "held") return this.held;
    hold.lose(state === "taken" ? "taken" : "expired", "found on isHeld");
    return false;
  }

  /**
   * Gives this entry back; the lock is freed at its hold's last entry. Idempotent: later calls do
   * nothing. Rejects with LockLostError when the lease had been lost (the critical section may
   * not have been exclusive); with ConnectionError (QuorumError in quorum mode) if Redis could not
   * confirm it, at the latest when the lease's validity runs out: the lease is not renewed any
   * more and the lock expires after its ttl.
   */
  release(): Promise<void> {
    if (this.#state !== HELD) return Promise.resolve();
    if (this.#releasing) return this.#releasing;
    const releasing = this.#release();
    // Kept for the calls made while it runs, until it is decided (#finish); a release decided at
    // once (a lease already lost) has nothing to join.
    if (this.#state === HELD) this.#releasing = releasing;
    return releasing;
  }

  /** Releases the lease (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  async #release(): Promise<void> {
    const hold = this.#hold;
    const rt = this.#rt;
    // Stop renewing before the network call: a release must never race a renewal of itself. The
    // validity stays watched: it bounds this call, and the signal still aborts when it runs out.
    const last = hold.leave(this);
    if (last) rt.keepalive.stopRenewing(hold);
    hold.checkValidity();
    const lostBefore = hold.lost;
    if (lostBefore) {
      this.#state = LOST_WHILE_HELD;
      this.#finish(last);
      // Redis may still have it (this process was paused, say): give it back, so it blocks nobody.
      rt.store.release(hold.ref, this._entry).catch(() => {});
      throw lostBefore;
    }
    let result: ReleaseResult;
    // A grant to a waiter of this instance goes unannounced: it is handed over from the reply.
    const call = rt.store.release(hold.ref, this._entry, rt.ticketPrefix);
    // With the last lease the hold is `releasing`: close() lets this call finish rather than cut it.
    hold.beginRelease(last);
    rt.shutdown.begin();
    try {
      // Bounded by its command timeout; by the hold's validity too, when that ends first.
      const validityFirst = hold.validUntilAt - rt.clock.now() < rt.callBoundMs;
      result = await (validityFirst ? race(call, hold.lostSignal) : call);
    } catch (error) {
      hold.callSettled();
      rt.shutdown.end();
      this.#finish(last);
      if (error === hold.lost) {
        // The reply may still come, with a grant for a waiter here that nobody announced.
        call.then((late) => { if (late.status === "freed") rt.handOver(late.grants); }, () => {});
        this.#state = LOST_WHILE_HELD;
        this.#controller?.abort(error);
        throw new ConnectionError(`the release of lock "${this.key}" was not confirmed before its validity ran out; the lock expires by itself`,
          { cause: error });
      }
      throw error;
    }
    hold.callSettled();
    rt.shutdown.end();
    if (result.status === "gone" || result.status === "taken") {
      const error = hold.lose(result.status === "taken" ? "taken" : "expired", "found on release");
      this.#finish(last);
      this.#state = LOST_WHILE_HELD;
      this.#controller?.abort(error);
      throw error;
    }
    this.#finish(last);
    if (result.status === "freed") rt.handOver(result.grants);
    if (listened("release")) this.#announceRelease();
  }

  /** Out of line: a closure in `#release` would cost every release a context, listened to or not. */
  #announceRelease(): void {
    publish("release", () => ({ key: this.key, fencingToken: this.fencingToken, heldMs: this.#rt.clock.now() - this.#acquiredAt }));
  }

  #finish(last: boolean): void {
    if (this.#state === HELD) this.#state = RELEASED;
    this.#releasing = undefined;
    if (!last) return;
    this.#hold.released();
    this.#rt.keepalive.forget(this.#hold);
    this.#rt.holdEnded(this.#hold);
  }

  /** An extension confirmed after the hold was lost kept the lock for nobody: give our entries back. */
  #prolongedForNobody(state: HoldState): void {
    if (state !== "held") return;
    for (const lease of this.#hold.leases) this.#rt.store.release(this.#hold.ref, lease._entry).catch(() => {});
  }
}
