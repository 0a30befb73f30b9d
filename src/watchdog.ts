/**
 * The watchdog: one per store (per node, or per quorum). One timer renews every lease that is
 * due with one batched call per tick, and one timer watches the earliest validity deadline, so
 * a lease whose renewals stopped getting through is given up before Redis could let anyone
 * else in. Timers are unref'd: a process whose work is done is never kept alive by us.
 */
import { now } from "./clock.js";
import { publish } from "./diagnostics.js";
import type { Hold, HoldTracker } from "./lease.js";
import type { LeaseState } from "./scripts/index.js";

/** Renews many holds at once; one state per hold, in order. Rejects if the store is unreachable. */
export type RenewBatch = (holds: readonly Hold[]) => Promise<LeaseState[]>;

export class Watchdog implements HoldTracker {
  readonly #holds = new Set<Hold>();
  readonly #renew: RenewBatch;
  #renewTimer: NodeJS.Timeout | undefined;
  #renewTimerAt = Infinity;
  #expiryTimer: NodeJS.Timeout | undefined;
  #expiryTimerAt = Infinity;
  #ticking = false;
  #closed = false;

  constructor(renew: RenewBatch) {
    this.#renew = renew;
  }

  /** Number of holds being renewed. */
  get size(): number {
    return this.#holds.size;
  }

  track(hold: Hold): void {
    if (this.#closed) return;
    this.#holds.add(hold);
    // Only an earlier deadline than the pending timers' moves them: O(1) per new lease.
    if (!this.#ticking && hold.renewDueAt < this.#renewTimerAt) this.#armRenew(hold.renewDueAt);
    if (hold.validUntilAt < this.#expiryTimerAt) this.#armExpiry(hold.validUntilAt);
  }

  untrack(hold: Hold): void {
    // The timers stay armed: a tick with nothing due costs less than re-arming on every
    // acquire/release cycle, and they are unref'd, so they keep no process alive.
    this.#holds.delete(hold);
  }

  /** Stops renewing for good; returns the holds it was renewing (they expire in Redis after their ttl). */
  close(): Hold[] {
    this.#closed = true;
    const holds = [...this.#holds];
    this.#holds.clear();
    this.#disarm();
    return holds;
  }

  #disarm(): void {
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#expiryTimer);
    this.#renewTimer = this.#expiryTimer = undefined;
    this.#renewTimerAt = this.#expiryTimerAt = Infinity;
  }

  #armRenew(at: number): void {
    clearTimeout(this.#renewTimer);
    this.#renewTimerAt = at;
    this.#renewTimer = setTimeout(() => void this.#tick(), Math.max(0, at - now()));
    this.#renewTimer.unref();
  }

  #armExpiry(at: number): void {
    clearTimeout(this.#expiryTimer);
    this.#expiryTimerAt = at;
    this.#expiryTimer = setTimeout(() => this.#expire(), Math.max(0, Math.ceil(at - now())));
    this.#expiryTimer.unref();
  }

  /** Gives up every hold whose validity ran out, then watches the next deadline. */
  #expire(): void {
    this.#expiryTimer = undefined;
    this.#expiryTimerAt = Infinity;
    const at = now();
    let next = Infinity;
    for (const hold of this.#holds) {
      hold.checkValidity(at);
      if (hold.lost) this.#holds.delete(hold);
      else next = Math.min(next, hold.validUntilAt);
    }
    if (next < Infinity) this.#armExpiry(next);
  }

  /** One tick: renew all holds due within 2/9 of their ttl, in one batch. */
  async #tick(): Promise<void> {
    this.#renewTimer = undefined;
    this.#renewTimerAt = Infinity;
    if (this.#closed) return;
    this.#ticking = true;
    const sentAt = now();
    const due: Hold[] = [];
    for (const hold of this.#holds) {
      // A lease past its validity (the process was paused, say) is lost, not renewed.
      hold.checkValidity(sentAt);
      if (hold.lost) this.#holds.delete(hold);
      // Renewing early lets leases taken at different moments fall into one batch: with a
      // window of 2/3 of the renewal interval (ttl/3), any two groups of one ttl merge at the
      // next tick of either, even when timers fire late (a window of exactly half the interval
      // let groups half an interval apart tick separately forever).
      else if (hold.renewDueAt - sentAt <= (hold.ttlMs * 2) / 9) due.push(hold);
    }
    if (due.length > 0) await this.#renewDue(due, sentAt);
    this.#ticking = false;
    if (this.#closed) return;
    let nextRenew = Infinity;
    let nextExpiry = Infinity;
    for (const hold of this.#holds) {
      nextRenew = Math.min(nextRenew, hold.renewDueAt);
      nextExpiry = Math.min(nextExpiry, hold.validUntilAt);
    }
    if (nextRenew < Infinity) this.#armRenew(nextRenew);
    if (nextExpiry < this.#expiryTimerAt) this.#armExpiry(nextExpiry);
  }

  async #renewDue(due: Hold[], sentAt: number): Promise<void> {
    for (const hold of due) hold.renewInFlight = true;
    let states: LeaseState[] | undefined;
    try {
      states = await this.#renew(due);
    } catch (error) {
      // Unreachable: try again soon; the expiry timer gives the lease up if this lasts.
      const retryAt = now();
      for (const hold of due) {
        hold.renewFailed = true;
        hold.renewDueAt = retryAt + Math.max(hold.ttlMs / 10, 5);
      }
      publish("error", () => ({ key: due[0]?.keys.key ?? "", operation: "renew", error: error as Error }));
    } finally {
      for (const hold of due) hold.renewInFlight = false;
    }
    if (!states) return;
    due.forEach((hold, i) => {
      const state = states[i];
      if (!this.#holds.has(hold)) return; // released while the renewal was on the wire
      if (state === "held") {
        hold.confirmed(sentAt);
        hold.checkValidity();
        publish("extend", () => ({ key: hold.keys.key, fencingToken: hold.token, ttl: hold.ttlMs, automatic: true }));
      } else {
        hold.lose(state === "taken" ? "taken" : "expired", "found by the watchdog's renewal");
      }
      if (hold.lost) this.#holds.delete(hold);
    });
  }
}
