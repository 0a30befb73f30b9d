/**
 * A worker's side of the history: stamps events on the shared clock, buffers them and streams
 * them to the orchestrator in batches; and the lease watcher, which looks at every lease the
 * worker holds (held, signal.aborted) every few ms, like a careful holder would before each step.
 */
import { getEventListeners } from "node:events";
import type { Lease } from "../../src/index.js";
import { monoMs, since } from "./clock.js";
import type { HistoryEvent, ObsEvent, Unstamped } from "./history.js";
import type { FromWorker } from "./ipc.js";

const FLUSH_EVERY_MS = 50;
/** The heartbeat that measures the event loop's stalls, and the lateness written down as one. */
const HEARTBEAT_MS = 10;
const STALL_MS = 50;
/** How often a held lease is looked at, and how often an unchanged look is written down. */
const POLL_EVERY_MS = 20;
const OBS_EVERY_MS = 100;

export class Recorder {
  readonly worker: number;
  readonly #send: (message: FromWorker) => Promise<void>;
  #origin = monoMs();
  #buffer: HistoryEvent[] = [];
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #calls = 0;
  #leases = 0;
  #writes = 0;

  constructor(worker: number, send: (message: FromWorker) => Promise<void>) {
    this.worker = worker;
    this.#send = send;
  }

  start(origin: number): void {
    this.#origin = origin;
    this.#timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    let last = this.now();
    this.#heartbeat = setInterval(() => {
      const now = this.now();
      if (now - last > HEARTBEAT_MS + STALL_MS) this.emit({ type: "stall", from: last + HEARTBEAT_MS }, now);
      last = now;
    }, HEARTBEAT_MS);
  }

  /** Ms since the run's origin, on the shared clock. */
  now(): number {
    return since(this.#origin);
  }

  emit(event: Unstamped, t = this.now()): void {
    if (event.type === "invoke") this.#open++;
    else if (event.type === "ok" || event.type === "fail") this.#open--;
    this.#buffer.push({ ...event, t, w: this.worker } as HistoryEvent);
  }

  /** Calls invoked and not settled yet. */
  get openCalls(): number {
    return this.#open;
  }

  #open = 0;

  callId(): string {
    return `${this.worker}.c${++this.#calls}`;
  }

  leaseId(): string {
    return `${this.worker}.L${++this.#leases}`;
  }

  writeId(): string {
    return `${this.worker}.g${++this.#writes}`;
  }

  async flush(): Promise<void> {
    if (this.#buffer.length === 0) return;
    const events = this.#buffer;
    this.#buffer = [];
    await this.#send({ type: "events", events });
  }

  /** No more periodic flushes nor heartbeats (their timers would count as handles left open); flush() still works. */
  stopTimer(): void {
    clearInterval(this.#timer);
    clearInterval(this.#heartbeat);
    this.#timer = undefined;
    this.#heartbeat = undefined;
  }
}

interface Watched {
  readonly id: string;
  readonly lease: Lease;
  lastAt: number;
  held: boolean;
  aborted: boolean;
  /** A look since the last one written down that saw the same thing (written before any change). */
  unwrittenAt: number | undefined;
}

export class LeaseWatch {
  readonly #rec: Recorder;
  readonly #leases = new Map<string, Watched>();
  #timer: NodeJS.Timeout | undefined;

  constructor(rec: Recorder) {
    this.#rec = rec;
  }

  /** Starts watching a lease just acquired: the first look, and its signal's abort. */
  add(id: string, lease: Lease): void {
    const w: Watched = { id, lease, lastAt: -Infinity, held: false, aborted: false, unwrittenAt: undefined };
    this.#leases.set(id, w);
    const signal = lease.signal;
    signal.addEventListener("abort", () => {
      const reason = signal.reason as { reason?: unknown } | undefined;
      this.#rec.emit({ type: "abort", lease: id, reason: String(reason?.reason ?? "?") });
    }, { once: true });
    this.observe(id, "acquired");
    this.#timer ??= setInterval(() => this.#poll(), POLL_EVERY_MS);
  }

  /** Looks at the lease now and writes it down. Stamped first: "held at t" is then true of t. */
  observe(id: string, via: ObsEvent["via"]): boolean {
    const w = this.#leases.get(id);
    if (!w) return false;
    const t = this.#rec.now();
    const held = w.lease.held;
    const aborted = w.lease.signal.aborted;
    this.#write(w, t, held, aborted, via);
    return held && !aborted;
  }

  /** Writes a look down; the last unwritten look that saw the previous state goes first. */
  #write(w: Watched, t: number, held: boolean, aborted: boolean, via: ObsEvent["via"]): void {
    if (w.unwrittenAt !== undefined && (held !== w.held || aborted !== w.aborted)) {
      this.#rec.emit({ type: "obs", lease: w.id, held: w.held, aborted: w.aborted, via: "poll" }, w.unwrittenAt);
    }
    w.unwrittenAt = undefined;
    w.held = held;
    w.aborted = aborted;
    w.lastAt = t;
    this.#rec.emit({ type: "obs", lease: w.id, held, aborted, via }, t);
  }

  remove(id: string): void {
    this.#leases.delete(id);
    if (this.#leases.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #poll(): void {
    for (const w of this.#leases.values()) {
      const t = this.#rec.now();
      const held = w.lease.held;
      const aborted = w.lease.signal.aborted;
      if (held !== w.held || aborted !== w.aborted || t - w.lastAt >= OBS_EVERY_MS) this.#write(w, t, held, aborted, "poll");
      else w.unwrittenAt = t;
    }
  }
}

/** Abort listeners on a signal (to find the ones a finished call forgot to remove). */
export const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;
