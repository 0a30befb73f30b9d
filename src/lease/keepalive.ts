/**
 * The watchdog: one per Surelock. One timer sends, per tick, one keep-alive batch (one script
 * call per node, per slot in a Cluster) that renews every hold that is due and refreshes every
 * waiting ticket that is due; one timer watches the earliest validity deadline, so a hold whose
 * renewals stopped getting through is given up before Redis could let anyone else in. A tick
 * starts only after the previous one ended. Timers never keep a process alive.
 */
import type { Clock } from "../clock.js";
import { publish } from "../diagnostics.js";
import type { HoldState, KeepaliveItem, Store, TicketState } from "../store/types.js";
import type { Confirmation, Hold } from "./hold.js";

/** A waiting ticket, as the watchdog refreshes it. */
export interface TicketKeeper {
  /** When it should be refreshed next (monotonic ms). */
  readonly dueAt: number;
  item(): KeepaliveItem;
  /** What the refresh sent at `sentAt` found. */
  refreshed(state: TicketState, sentAt: number): void;
  /** The refresh could not be made (`error`: why); it will be tried again. */
  failed(retryAt: number, error: Error): void;
}

export class Keepalive {
  readonly #store: Store;
  readonly #clock: Clock;
  /**
   * Holds whose validity is watched: the renewed ones (`hold.renewed`), and those being released
   * or of fixed length. One set, not two: with 100,000 holds each entry counts.
   */
  readonly #watched = new Set<Hold>();
  #renewedCount = 0;
  readonly #tickets = new Set<TicketKeeper>();
  #tickTimer: unknown;
  #tickAt = Infinity;
  #tickKeepsAlive = false;
  #expiryTimer: unknown;
  #expiryAt = Infinity;
  #ticking = false;
  /** The instance's close (its Shutdown's signal): once it aborts, nothing new is watched. */
  readonly #closed: AbortSignal;

  constructor(store: Store, clock: Clock, closed: AbortSignal) {
    this.#store = store;
    this.#clock = clock;
    this.#closed = closed;
  }

  /** Number of holds being renewed. */
  get size(): number {
    return this.#renewedCount;
  }

  /** Starts watching a hold's validity, and renewing it unless it is of fixed length. */
  track(hold: Hold): void {
    if (this.#closed.aborted) return;
    this.#watched.add(hold);
    if (hold.startRenewals()) {
      this.#renewedCount++;
      this.#wake(hold.renewDueAt);
    }
    this.#watchExpiry(hold.validUntilAt);
  }

  /** Stops renewing a hold; its validity stays watched until `forget`. */
  stopRenewing(hold: Hold): void {
    if (hold.stopRenewals()) this.#renewedCount--;
  }

  forget(hold: Hold): void {
    this.stopRenewing(hold);
    this.#watched.delete(hold);
  }

  /** A waiter's ticket to refresh while it waits. */
  addTicket(ticket: TicketKeeper): void {
    if (this.#closed.aborted) return;
    this.#tickets.add(ticket);
    // A waiter's promise depends on the tick: the timer must keep the process alive now.
    if (!this.#tickKeepsAlive && this.#tickAt < Infinity && !this.#ticking) this.#arm(this.#tickAt);
    this.#wake(ticket.dueAt);
  }

  removeTicket(ticket: TicketKeeper): void {
    this.#tickets.delete(ticket);
  }

  /** The validity or ttl of `hold` changed (an extend): watch its new deadline, renew it on its new schedule. */
  confirmed(hold: Hold): void {
    if (!this.#watched.has(hold)) return;
    this.#watchExpiry(hold.validUntilAt);
    if (hold.renewed) this.#wake(hold.renewDueAt);
  }

  /**
   * Stops for good, once the instance is closing; returns the holds it was watching (they expire
   * in Redis after their ttl). A hold being released stays watched until `forget`: its release is
   * let finish, and its validity still bounds it.
   */
  close(): Hold[] {
    const holds = [...this.#watched];
    for (const hold of holds) {
      this.stopRenewing(hold);
      if (hold.phase !== "releasing") this.#watched.delete(hold);
    }
    this.#tickets.clear();
    this.#clock.clearTimeout(this.#tickTimer);
    if (this.#watched.size === 0) this.#clock.clearTimeout(this.#expiryTimer);
    return holds;
  }

  #wake(at: number): void {
    if (this.#ticking || at >= this.#tickAt) return;
    this.#arm(at);
  }

  #arm(at: number): void {
    this.#clock.clearTimeout(this.#tickTimer);
    this.#tickAt = at;
    // Renewals alone never keep a process alive (a lease nobody releases is not a reason to stay);
    // a waiting acquire does.
    this.#tickKeepsAlive = this.#tickets.size > 0;
    this.#tickTimer = this.#clock.setTimeout(() => void this.#tick(), at - this.#clock.now(), this.#tickKeepsAlive);
  }

  #watchExpiry(at: number): void {
    if (at >= this.#expiryAt) return;
    this.#clock.clearTimeout(this.#expiryTimer);
    this.#expiryAt = at;
    this.#expiryTimer = this.#clock.setTimeout(() => this.#expire(), Math.ceil(at - this.#clock.now()));
  }

  /** Gives up every hold whose validity ran out, then watches the next deadline. */
  #expire(): void {
    this.#expiryAt = Infinity;
    const at = this.#clock.now();
    let next = Infinity;
    for (const hold of this.#watched) {
      hold.checkValidity(at);
      if (hold.lost) this.forget(hold);
      else next = Math.min(next, hold.validUntilAt);
    }
    // After close only holds being released are left here, each until its release settles.
    if (next < Infinity) this.#watchExpiry(next);
  }

  /** One tick: renew the holds due within 2/9 of their ttl and refresh the due tickets, in one batch. */
  async #tick(): Promise<void> {
    this.#tickAt = Infinity;
    if (this.#closed.aborted) return;
    this.#ticking = true;
    const sentAt = this.#clock.now();
    const holds: Hold[] = [];
    for (const hold of this.#watched) {
      if (!hold.renewed) continue;
      // A hold past its validity (the process was paused, say) is lost, not renewed.
      hold.checkValidity(sentAt);
      if (hold.lost) this.forget(hold);
      // Renewing early lets holds taken at different moments fall into one batch: with a window
      // of 2/3 of the renewal interval (ttl/3), any two groups of one ttl merge at the next tick
      // of either, even when timers fire late.
      else if (hold.renewDueAt - sentAt <= (hold.ttlMs * 2) / 9) holds.push(hold);
    }
    const tickets = [...this.#tickets].filter((t) => t.dueAt <= sentAt + 1);
    if (holds.length + tickets.length > 0) await this.#send(holds, tickets, sentAt);
    this.#ticking = false;
    if (this.#closed.aborted) return;
    let next = Infinity;
    for (const hold of this.#watched) if (hold.renewed) next = Math.min(next, hold.renewDueAt);
    for (const ticket of this.#tickets) next = Math.min(next, ticket.dueAt);
    if (next < Infinity) this.#wake(next);
  }

  async #send(holds: readonly Hold[], tickets: readonly TicketKeeper[], sentAt: number): Promise<void> {
    const confirmations: Confirmation[] = holds.map((hold) => hold.beginRenewal());
    const items: KeepaliveItem[] = [
      ...holds.map((hold, i): KeepaliveItem => ({ kind: "renew", ref: hold.ref, ttlMs: (confirmations[i] as Confirmation).ttlMs })),
      ...tickets.map((t) => t.item()),
    ];
    let results;
    try {
      results = await this.#store.keepalive(items);
    } catch (error) {
      // Unreachable: try again soon; the expiry timer gives a hold up if this lasts.
      const retryAt = this.#clock.now();
      for (const hold of holds) hold.renewalFailed(retryAt);
      for (const t of tickets) t.failed(retryAt + 50, error as Error);
      publish("error", () => ({ key: holds[0]?.key ?? "", operation: "renew", error: error as Error }));
      return;
    }
    holds.forEach((hold, i) => {
      // An answer for a hold released (or lost) while the renewal was on the wire does nothing.
      if (hold.renewalAnswered(confirmations[i] as Confirmation, results[i] as HoldState)) {
        this.confirmed(hold);
        publish("extend", () => ({ key: hold.key, fencingToken: hold.token, ttl: hold.ttlMs, automatic: true }));
      }
      if (hold.lost) this.forget(hold);
    });
    tickets.forEach((t, i) => {
      if (this.#tickets.has(t)) t.refreshed(results[holds.length + i] as TicketState, sentAt);
    });
  }
}
