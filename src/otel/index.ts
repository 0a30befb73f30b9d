/**
 * `surelock/otel`: OpenTelemetry spans and metrics from surelock's node:diagnostics_channel
 * events. It needs `@opentelemetry/api` (an optional peer dependency) and the SDK the application
 * already runs; the main entry depends on no telemetry package. docs/recipes/opentelemetry.md
 * lists what it records.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { context, metrics, SpanStatusCode, trace, type Attributes, type Meter, type Span, type Tracer } from "@opentelemetry/api";
import type { AcquireMessage, ErrorMessage, ExtendMessage, LostMessage, ReleaseMessage, WaitMessage } from "../index.js";

/** Options of `instrumentSurelock()`. */
export interface SurelockInstrumentation {
  /** Where spans go. Default: `trace.getTracer("surelock")` of the global provider. */
  readonly tracer?: Tracer;
  /** Where metrics go. Default: `metrics.getMeter("surelock")` of the global provider. */
  readonly meter?: Meter;
  /**
   * The metric attribute `surelock.key` for a lock key, or undefined for none (the default). Lock
   * keys are often unbounded (`orders:42`, `orders:43`, …): map them to a few names, such as
   * `(key) => key.split(":")[0]`. Spans always carry the key.
   */
  readonly metricKey?: (key: string) => string | undefined;
}

/** A hold of one lock in this process: its span, and how many entries (re-entries) stand on it. */
interface HeldSpan {
  readonly span: Span;
  readonly startedAt: number;
  entries: number;
  /** When Redis last confirmed it (acquired or renewed), wall-clock ms. */
  confirmedAt: number;
}

/** Wall-clock ms with the monotonic clock's resolution, as OpenTelemetry takes its times. */
const wallNow = (): number => performance.timeOrigin + performance.now();

/**
 * Subscribes to surelock's channels and records spans (`surelock.acquire`, `surelock.hold`) and
 * metrics (wait and hold durations, acquisitions, waiters, failures, losses, renewal lateness,
 * outages seen by waiters, cleanup errors). Call it once, after the SDK registered its providers.
 * Returns the function that unsubscribes (and ends the hold spans still open).
 */
export function instrumentSurelock(options: SurelockInstrumentation = {}): () => void {
  const tracer = options.tracer ?? trace.getTracer("surelock");
  const meter = options.meter ?? metrics.getMeter("surelock");
  const named = (key: string): Attributes => {
    const name = options.metricKey?.(key);
    return name === undefined ? {} : { "surelock.key": name };
  };

  const waitSeconds = meter.createHistogram("surelock.acquire.wait", { unit: "s", description: "From the call to the lease, per acquisition (re-entries excluded)" });
  const holdSeconds = meter.createHistogram("surelock.hold.duration", { unit: "s", description: "From acquisition to the last release, or to the loss" });
  const acquisitions = meter.createCounter("surelock.acquires", { description: "Acquisitions; surelock.contended: the first attempt found the lock taken" });
  const waiting = meter.createUpDownCounter("surelock.waiters", { description: "Acquires waiting now" });
  const failures = meter.createCounter("surelock.acquire.failures", { description: "Waits that ended without the lock, by surelock.outcome" });
  const losses = meter.createCounter("surelock.losses", { description: "Leases lost while held, by surelock.reason (close() is not a loss)" });
  const lateness = meter.createHistogram("surelock.renewal.lateness", { unit: "s", description: "How much later than ttl/3 after its last confirmation a renewal was confirmed" });
  const unreachable = meter.createCounter("surelock.waits.unreachable", { description: "Times Redis stopped answering a waiting acquire" });
  const cleanupErrors = meter.createCounter("surelock.errors", { description: "Best-effort cleanup that failed, by surelock.operation" });

  const held = new Map<string, HeldSpan>();
  const idOf = (key: string, token: bigint): string => `${key}\u0000${token}`;
  const finish = (id: string, hold: HeldSpan, key: string): void => {
    held.delete(id);
    hold.span.end();
    holdSeconds.record((wallNow() - hold.startedAt) / 1000, named(key));
  };

  const onWait = (message: unknown): void => {
    const m = message as WaitMessage;
    switch (m.phase) {
      case "start":
        waiting.add(1, named(m.key));
        return;
      case "unreachable":
        unreachable.add(1, named(m.key));
        return;
      case "reachable":
        return;
      case "end":
        break;
    }
    waiting.add(-1, named(m.key));
    if (m.outcome === "acquired") return;
    const outcome = m.outcome ?? "error";
    failures.add(1, { ...named(m.key), "surelock.outcome": outcome });
    // Published in the caller's async context: the span joins the caller's trace.
    const span = tracer.startSpan("surelock.acquire", {
      startTime: wallNow() - m.waitedMs,
      attributes: { "surelock.key": m.key, "surelock.outcome": outcome },
    }, context.active());
    span.setStatus({ code: SpanStatusCode.ERROR, message: `gave up waiting (${outcome})` });
    span.end();
  };

  const onAcquire = (message: unknown): void => {
    const m = message as AcquireMessage;
    const id = idOf(m.key, m.fencingToken);
    const known = held.get(id);
    if (m.reentered && known) {
      known.entries++;
      return;
    }
    const at = wallNow();
    const attributes = { "surelock.key": m.key, "surelock.fencing_token": m.fencingToken.toString() };
    tracer.startSpan("surelock.acquire", { startTime: at - m.waitedMs, attributes: { ...attributes, "surelock.attempts": m.attempts } }, context.active())
      .end(at);
    acquisitions.add(1, { ...named(m.key), "surelock.contended": m.attempts > 1 });
    waitSeconds.record(m.waitedMs / 1000, named(m.key));
    held.set(id, { span: tracer.startSpan("surelock.hold", { startTime: at, attributes }, context.active()), startedAt: at, entries: 1, confirmedAt: at });
  };

  const onExtend = (message: unknown): void => {
    const m = message as ExtendMessage;
    const hold = held.get(idOf(m.key, m.fencingToken));
    if (!hold) return;
    const at = wallNow();
    // The watchdog renews ttl/3 after the last confirmation: later means a stalled event loop or a slow Redis.
    if (m.automatic) lateness.record(Math.max(0, at - hold.confirmedAt - m.ttl / 3) / 1000, named(m.key));
    hold.confirmedAt = at;
  };

  const onRelease = (message: unknown): void => {
    const m = message as ReleaseMessage;
    const id = idOf(m.key, m.fencingToken);
    const hold = held.get(id);
    if (hold && --hold.entries === 0) finish(id, hold, m.key);
  };

  const onLost = (message: unknown): void => {
    const m = message as LostMessage;
    losses.add(1, { ...named(m.key), "surelock.reason": m.reason });
    const id = idOf(m.key, m.fencingToken);
    const hold = held.get(id);
    if (!hold) return;
    hold.span.addEvent("surelock.lost", { "surelock.reason": m.reason, "surelock.late_by_ms": m.lateByMs });
    hold.span.setStatus({ code: SpanStatusCode.ERROR, message: `lock lost (${m.reason})` });
    finish(id, hold, m.key);
  };

  const onError = (message: unknown): void => {
    const m = message as ErrorMessage;
    cleanupErrors.add(1, { ...named(m.key), "surelock.operation": m.operation });
  };

  const subscriptions: readonly [string, (message: unknown) => void][] = [
    ["surelock:wait", onWait], ["surelock:acquire", onAcquire], ["surelock:extend", onExtend],
    ["surelock:release", onRelease], ["surelock:lost", onLost], ["surelock:error", onError],
  ];
  for (const [name, handler] of subscriptions) subscribe(name, handler);
  return () => {
    for (const [name, handler] of subscriptions) unsubscribe(name, handler);
    // A hold given back by close() publishes no release here: its span ends now, without an error.
    for (const hold of held.values()) hold.span.end();
    held.clear();
  };
}
