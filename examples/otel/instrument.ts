// OpenTelemetry for surelock, built on its node:diagnostics_channel events: spans for acquiring
// and holding a lock, metrics for wait time, hold time, contention, losses and renewal lateness.
// surelock depends on no OpenTelemetry package; this file is the whole bridge. Copy it.
import diagnostics from "node:diagnostics_channel";
import { context, metrics, SpanStatusCode, trace, type Attributes, type Meter, type Span, type Tracer } from "@opentelemetry/api";
import type { AcquireMessage, ErrorMessage, ExtendMessage, LostMessage, ReleaseMessage, WaitMessage } from "surelock";

export interface SurelockInstrumentation {
  readonly tracer?: Tracer;
  readonly meter?: Meter;
  /**
   * The key as a metric attribute, or undefined for none (the default). Lock keys are often
   * unbounded (`orders:42`, `orders:43`, ...): map them to a few names, e.g. (k) => k.split(":")[0].
   * Spans always carry the key.
   */
  readonly metricKey?: (key: string) => string | undefined;
}

/** One hold of a lock in this process: its span and the entries (re-entries) on it. */
interface HoldSpan {
  readonly span: Span;
  readonly startedAt: number;
  entries: number;
  /** When the hold was last confirmed by Redis (acquired, or renewed). */
  confirmedAt: number;
}

/** Wall-clock ms from the monotonic clock, as OpenTelemetry wants its times. */
const nowMs = (): number => performance.timeOrigin + performance.now();

/** Subscribes to surelock's channels; returns the function that unsubscribes. */
export function instrumentSurelock(options: SurelockInstrumentation = {}): () => void {
  const tracer = options.tracer ?? trace.getTracer("surelock");
  const meter = options.meter ?? metrics.getMeter("surelock");
  const keyOf = (key: string): Attributes => {
    const name = options.metricKey?.(key);
    return name === undefined ? {} : { "surelock.key": name };
  };

  const waitTime = meter.createHistogram("surelock.acquire.wait", { unit: "s", description: "From the call to the lease, for acquisitions (not re-entries)" });
  const holdTime = meter.createHistogram("surelock.hold.duration", { unit: "s", description: "From acquisition to the last release, or to the loss" });
  const acquires = meter.createCounter("surelock.acquires", { description: "Acquisitions; surelock.contended: the first attempt found the lock taken" });
  const waiters = meter.createUpDownCounter("surelock.waiters", { description: "Acquires waiting right now" });
  const failures = meter.createCounter("surelock.acquire.failures", { description: "Waits that ended without the lock, by surelock.outcome" });
  const losses = meter.createCounter("surelock.losses", { description: "Leases lost while held, by surelock.reason" });
  const lateness = meter.createHistogram("surelock.renewal.lateness", { unit: "s", description: "How much later than ttl/3 after the last confirmation a renewal was confirmed" });
  const errors = meter.createCounter("surelock.errors", { description: "Best-effort cleanup that failed, by surelock.operation" });

  const holds = new Map<string, HoldSpan>();
  const holdId = (key: string, token: bigint): string => `${key}\0${token}`;

  const endHold = (id: string, hold: HoldSpan, key: string): void => {
    holds.delete(id);
    hold.span.end();
    holdTime.record((nowMs() - hold.startedAt) / 1000, keyOf(key));
  };

  const onWait = (message: unknown): void => {
    const m = message as WaitMessage;
    if (m.phase === "start") {
      waiters.add(1, keyOf(m.key));
      return;
    }
    if (m.phase !== "end") return;
    waiters.add(-1, keyOf(m.key));
    if (m.outcome === "acquired") return;
    failures.add(1, { ...keyOf(m.key), "surelock.outcome": m.outcome ?? "error" });
    // Runs in the caller's async context: the span joins the caller's trace.
    const span = tracer.startSpan("surelock.acquire", {
      startTime: nowMs() - m.waitedMs,
      attributes: { "surelock.key": m.key, "surelock.outcome": m.outcome ?? "error" },
    }, context.active());
    span.setStatus({ code: SpanStatusCode.ERROR, message: `gave up waiting (${m.outcome ?? "error"})` });
    span.end();
  };

  const onAcquire = (message: unknown): void => {
    const m = message as AcquireMessage;
    const id = holdId(m.key, m.fencingToken);
    const known = holds.get(id);
    if (m.reentered && known) {
      known.entries++;
      return;
    }
    const at = nowMs();
    const attributes = { "surelock.key": m.key, "surelock.fencing_token": m.fencingToken.toString() };
    const acquire = tracer.startSpan("surelock.acquire", {
      startTime: at - m.waitedMs,
      attributes: { ...attributes, "surelock.attempts": m.attempts },
    }, context.active());
    acquire.end(at);
    const contended = m.attempts > 1;
    acquires.add(1, { ...keyOf(m.key), "surelock.contended": contended });
    waitTime.record(m.waitedMs / 1000, keyOf(m.key));
    const span = tracer.startSpan("surelock.hold", { startTime: at, attributes }, context.active());
    holds.set(id, { span, startedAt: at, entries: 1, confirmedAt: at });
  };

  const onExtend = (message: unknown): void => {
    const m = message as ExtendMessage;
    const hold = holds.get(holdId(m.key, m.fencingToken));
    if (!hold) return;
    const at = nowMs();
    // The watchdog renews each lease about ttl/3 after its last confirmation; later than that
    // means an event loop that stalled, or a slow or unreachable Redis.
    if (m.automatic) lateness.record(Math.max(0, at - hold.confirmedAt - m.ttl / 3) / 1000, keyOf(m.key));
    hold.confirmedAt = at;
  };

  const onRelease = (message: unknown): void => {
    const m = message as ReleaseMessage;
    const id = holdId(m.key, m.fencingToken);
    const hold = holds.get(id);
    if (!hold) return;
    hold.entries--;
    if (hold.entries === 0) endHold(id, hold, m.key);
  };

  const onLost = (message: unknown): void => {
    const m = message as LostMessage;
    losses.add(1, { ...keyOf(m.key), "surelock.reason": m.reason });
    const id = holdId(m.key, m.fencingToken);
    const hold = holds.get(id);
    if (!hold) return;
    hold.span.addEvent("surelock.lost", { "surelock.reason": m.reason, "surelock.late_by_ms": m.lateByMs });
    hold.span.setStatus({ code: SpanStatusCode.ERROR, message: `lock lost (${m.reason})` });
    endHold(id, hold, m.key);
  };

  const onError = (message: unknown): void => {
    const m = message as ErrorMessage;
    errors.add(1, { ...keyOf(m.key), "surelock.operation": m.operation });
  };

  const handlers: [string, (message: unknown) => void][] = [
    ["surelock:wait", onWait], ["surelock:acquire", onAcquire], ["surelock:extend", onExtend],
    ["surelock:release", onRelease], ["surelock:lost", onLost], ["surelock:error", onError],
  ];
  for (const [name, handler] of handlers) diagnostics.subscribe(name, handler);
  return () => {
    for (const [name, handler] of handlers) diagnostics.unsubscribe(name, handler);
    for (const hold of holds.values()) hold.span.end();
    holds.clear();
  };
}
