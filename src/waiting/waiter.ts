/**
 * One waiting acquire: its ticket in the lock's queue, kept live by the watchdog's refreshes, and
 * the events that may end its wait — a grant (announced, handed over by a release in this
 * process, or found by a refresh), or a turn (the lock is free and it is the head, or messages
 * may have been missed: attempt now).
 */
import type { KeepaliveItem, AcquireCall, TicketState } from "../store/types.js";
import type { TicketKeeper } from "../lease/keepalive.js";

export type WaitEvent =
  /**
   * The lock was founded for this ticket. `sentAt`/`pttlMs` bound its validity when a refresh
   * found it; an announced grant is bounded by the waiter's last "queued" reply instead.
   */
  | { readonly kind: "granted"; readonly token: bigint; readonly pttlMs: number; readonly sentAt?: number }
  | { readonly kind: "turn" };

export class Waiter implements TicketKeeper {
  readonly call: AcquireCall;
  /** The channels it hears (one per key of a multi-key waiter). */
  readonly channels: readonly string[];
  dueAt: number;
  /**
   * The latest "queued" answers: when each was sent, and the lock's counter then. A grant of
   * token T was made after every answer whose counter is below T: the latest such send instant
   * bounds the grant's validity (the ticket was live from then on for its whole lease).
   */
  readonly #queuedAt: { sentAt: number; counter: bigint }[] = [];
  /** How often the ticket is refreshed, at most. */
  readonly periodMs: number;
  readonly #events: WaitEvent[] = [];
  #wake: (() => void) | undefined;
  /** Why Redis is not answering this waiter, from its last refresh; undefined once it answers. */
  unanswered: Error | undefined;
  /** Told when Redis stops answering this waiter's refreshes (`error`), and when it answers again (undefined). */
  onReachability: ((error: Error | undefined) => void) | undefined;

  constructor(call: AcquireCall, channels: readonly string[], periodMs: number, now: number) {
    this.call = call;
    this.channels = channels;
    this.periodMs = periodMs;
    this.dueAt = now + periodMs;
  }

  get ticket(): string {
    return this.call.ask.hold;
  }

  /**
   * An attempt or refresh sent at `sentAt` found the ticket queued at `position` (-1: unknown),
   * with the lock's counter at `counter`.
   */
  queued(sentAt: number, position: number, holderLeftMs: number, counter: bigint): void {
    this.#queuedAt.push({ sentAt, counter });
    if (this.#queuedAt.length > 16) this.#queuedAt.shift();
    this.dueAt = sentAt + this.periodMs;
    // The head of the line looks again when the holder's lease would run out, in case it died.
    if (position === 0 && holderLeftMs > 0) this.dueAt = Math.min(this.dueAt, sentAt + holderLeftMs + 1);
  }

  push(event: WaitEvent): void {
    this.#events.push(event);
    this.#wake?.();
  }

  /** The next event; rejects with the reason when `stop` aborts first. */
  next(stop: AbortSignal): Promise<WaitEvent> {
    const queued = this.#events.shift();
    if (queued) return Promise.resolve(queued);
    if (stop.aborted) return Promise.reject(stop.reason as unknown);
    return new Promise<WaitEvent>((resolve, reject) => {
      const onAbort = (): void => {
        this.#wake = undefined;
        reject(stop.reason as unknown);
      };
      stop.addEventListener("abort", onAbort, { once: true });
      this.#wake = () => {
        this.#wake = undefined;
        stop.removeEventListener("abort", onAbort);
        resolve(this.#events.shift() as WaitEvent);
      };
    });
  }

  /** The send instant of the latest "queued" answer that ran before a grant of `token`, if any. */
  queuedBefore(token: bigint): number | undefined {
    let at: number | undefined;
    for (const q of this.#queuedAt) if (q.counter < token && (at === undefined || q.sentAt > at)) at = q.sentAt;
    return at;
  }

  item(): KeepaliveItem {
    return { kind: "ticket", target: this.call.target, ask: this.call.ask };
  }

  /** Redis answered this waiter (an attempt or a refresh). After an outage, it is its turn to attempt: a turn missed meanwhile is not lost. */
  answered(): void {
    if (this.unanswered === undefined) return;
    this.unanswered = undefined;
    this.onReachability?.(undefined);
    this.push({ kind: "turn" });
  }

  /** Redis did not answer this waiter (`error`: an attempt's or a refresh's failure). */
  unreachable(error: Error): void {
    const first = this.unanswered === undefined;
    this.unanswered = error;
    if (first) this.onReachability?.(error);
  }

  refreshed(state: TicketState, sentAt: number): void {
    this.answered();
    if (state.status === "queued") this.queued(sentAt, state.position, 0, state.counter);
    else {
      this.dueAt = sentAt + this.periodMs;
      // "done": its hold was granted and given back without this waiter hearing of it; it attempts again.
      this.push(state.status === "granted" ? { kind: "granted", token: state.token, pttlMs: state.pttlMs, sentAt } : { kind: "turn" });
    }
  }

  failed(retryAt: number, error: Error): void {
    this.dueAt = retryAt;
    this.unreachable(error);
  }
}
