// The OpenTelemetry bridge (`surelock/otel`, the built entry, as docs/recipes/opentelemetry.md wires it)
// against a real redis-server, read through the SDK's in-memory exporters: which spans it makes,
// under which parent, and what each metric counts.
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, afterEach, before, describe, it } from "node:test";
import { context, SpanStatusCode, type Attributes } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import {
  AggregationTemporality, DataPointType, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram,
} from "@opentelemetry/sdk-metrics";
import { Redis } from "ioredis";
import { LockLostError, LockTimeoutError, Surelock } from "surelock";
// The source, so coverage counts it; test/package.test.ts loads the built surelock/otel from both builds.
import { instrumentSurelock } from "../../src/otel/index.js";
import { aborted, startsWaiting, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("OpenTelemetry recipe", () => {
  let server: RedisServer;
  let redis: Redis;
  let locks: Surelock;
  let stop: () => void;
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const tracer = tracerProvider.getTracer("test");
  const contextManager = new AsyncLocalStorageContextManager();

  before(async () => {
    context.setGlobalContextManager(contextManager.enable());
    server = await startStandalone();
    redis = new Redis(server.url);
    locks = new Surelock({ redis, ttl: 2_000 });
    // Every key as a metric attribute: fine in a test, where each test has its own keys.
    stop = instrumentSurelock({ tracer: tracerProvider.getTracer("surelock"), meter: meterProvider.getMeter("surelock"), metricKey: (k) => k });
  });
  afterEach(() => spans.reset());
  after(async () => {
    stop();
    await locks.close();
    await redis.quit();
    await server.stop();
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
    context.disable();
  });

  /** The data points of one metric for one key (`surelock.key`), as of now. */
  async function points(name: string, key: string): Promise<DataPoint<number | Histogram>[]> {
    exported.reset();
    await reader.forceFlush();
    const metric = exported.getMetrics().at(-1)?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    if (!metric || metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) return [];
    return (metric.dataPoints as DataPoint<number | Histogram>[]).filter((p) => p.attributes["surelock.key"] === key);
  }
  const sum = async (name: string, key: string, match: Attributes = {}): Promise<number> =>
    (await points(name, key))
      .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
      .reduce((total, p) => total + (p.value as number), 0);
  const histogram = async (name: string, key: string): Promise<Histogram> => {
    const [point] = await points(name, key);
    assert.ok(point, `${name} has a data point for ${key}`);
    return point.value as Histogram;
  };
  const named = (name: string, key: string): ReadableSpan[] =>
    spans.getFinishedSpans().filter((s) => s.name === name && s.attributes["surelock.key"] === key);

  it("acquire and hold spans are children of the caller's span; the hold lasts until the release", async () => {
    let token = 0n;
    await tracer.startActiveSpan("request", async (request) => {
      await locks.withLock("otel:plain", async (lease) => {
        token = lease.fencingToken;
        assert.equal(named("surelock.hold", "otel:plain").length, 0, "the hold span is still open while the lock is held");
      });
      request.end();
    });
    const request = spans.getFinishedSpans().find((s) => s.name === "request");
    const [acquire] = named("surelock.acquire", "otel:plain");
    const [hold] = named("surelock.hold", "otel:plain");
    assert.ok(request && acquire && hold);
    for (const span of [acquire, hold]) {
      assert.equal(span.parentSpanContext?.spanId, request.spanContext().spanId);
      assert.equal(span.spanContext().traceId, request.spanContext().traceId);
      assert.equal(span.attributes["surelock.fencing_token"], token.toString());
    }
    assert.equal(hold.status.code, SpanStatusCode.UNSET);
    assert.equal(await sum("surelock.acquires", "otel:plain", { "surelock.contended": false }), 1);
    assert.equal((await histogram("surelock.acquire.wait", "otel:plain")).count, 1);
    assert.equal((await histogram("surelock.hold.duration", "otel:plain")).count, 1);
  });

  it("re-entries make no spans of their own: one hold span, ended at the last release", async () => {
    await locks.withLock("otel:nested", () => locks.withLock("otel:nested", () => locks.withLock("otel:nested", () => {})));
    assert.equal(named("surelock.hold", "otel:nested").length, 1);
    assert.equal(named("surelock.acquire", "otel:nested").length, 1);
    assert.equal(await sum("surelock.acquires", "otel:nested"), 1);
  });

  it("contention: the waiter is counted while it waits, and its acquisition counts as contended with its wait", async () => {
    const first = await locks.mutex("otel:busy").acquire();
    const other = new Surelock({ redis, ttl: 2_000 }); // another "process": it does not re-enter
    try {
      const waiting = startsWaiting("otel:busy");
      const second = other.mutex("otel:busy").acquire();
      await waiting;
      assert.equal(await sum("surelock.waiters", "otel:busy"), 1);
      await first.release();
      const lease = await within(5_000, second, "the waiter to get the lock");
      await lease.release();
      assert.equal(await sum("surelock.waiters", "otel:busy"), 0);
      assert.equal(await sum("surelock.acquires", "otel:busy", { "surelock.contended": true }), 1);
      const wait = await histogram("surelock.acquire.wait", "otel:busy");
      assert.equal(wait.count, 2);
      assert.ok((wait.max ?? 0) > 0, "the contended acquire waited");
    } finally {
      await other.close();
    }
  });

  it("a wait that times out is a failed acquire span and a failure by outcome", async () => {
    const held = await locks.mutex("otel:timeout").acquire();
    const other = new Surelock({ redis, ttl: 2_000 });
    try {
      await assert.rejects(other.mutex("otel:timeout").acquire({ timeout: 100 }), LockTimeoutError);
      assert.equal(await sum("surelock.acquire.failures", "otel:timeout", { "surelock.outcome": "timeout" }), 1);
      const failed = named("surelock.acquire", "otel:timeout").find((s) => s.status.code === SpanStatusCode.ERROR);
      assert.ok(failed, "an acquire span with an error status");
      assert.equal(failed.attributes["surelock.outcome"], "timeout");
    } finally {
      await other.close();
      await held.release();
    }
  });

  it("a lost lease ends its hold span with an error and a surelock.lost event, and counts the loss by reason", async () => {
    const lease = await locks.mutex("otel:lost").acquire();
    await server.command("FLUSHALL"); // the lock is gone from Redis, as after a restart without persistence
    assert.equal(await lease.isHeld(), false);
    assert.ok((await aborted(lease.signal, 1_000)) instanceof LockLostError);
    await assert.rejects(lease.release(), LockLostError);
    const [hold] = named("surelock.hold", "otel:lost");
    assert.ok(hold);
    assert.equal(hold.status.code, SpanStatusCode.ERROR);
    assert.deepEqual(hold.events.map((e) => [e.name, e.attributes?.["surelock.reason"]]), [["surelock.lost", "expired"]]);
    assert.equal(await sum("surelock.losses", "otel:lost", { "surelock.reason": "expired" }), 1);
    assert.equal((await histogram("surelock.hold.duration", "otel:lost")).count, 1);
  });

  it("close() with a lease held is no loss: no surelock.losses, and its hold span ends without an error", async () => {
    const closing = new Surelock({ redis, ttl: 2_000 });
    const lease = await closing.mutex("otel:closed").acquire();
    await closing.close();
    assert.ok(lease.signal.aborted);
    assert.equal((lease.signal.reason as LockLostError).reason, "closed");
    assert.equal(await sum("surelock.losses", "otel:closed"), 0);
    const [hold] = named("surelock.hold", "otel:closed");
    assert.ok(hold, "the hold span ended at close()");
    assert.equal(hold.status.code, SpanStatusCode.UNSET);
    assert.deepEqual(hold.events, []);
  });

  it("a waiter that Redis stops answering is counted in surelock.waits.unreachable", async () => {
    const held = await locks.mutex("otel:outage").acquire();
    const other = new Surelock({ redis, ttl: 2_000, commandTimeout: 200 });
    try {
      const waiting = startsWaiting("otel:outage");
      const pending = other.mutex("otel:outage").acquire({ timeout: 1_500 }).catch((e: unknown) => e);
      await waiting;
      await server.pause();
      try {
        const error = await within(8_000, pending, "the waiter's timeout");
        assert.ok(error instanceof LockTimeoutError, String(error));
      } finally {
        await server.resume();
      }
      assert.ok(await sum("surelock.waits.unreachable", "otel:outage") >= 1);
      assert.equal(await sum("surelock.waiters", "otel:outage"), 0);
    } finally {
      await other.close();
      await held.release().catch(() => {});
    }
  });

  it("the watchdog's renewals are measured for lateness", async () => {
    const short = new Surelock({ redis, ttl: 300 });
    try {
      const renewed = new Promise<void>((resolve) => {
        const onExtend = (m: unknown): void => {
          const message = m as { key: string; automatic: boolean };
          if (message.key !== "otel:renewed" || !message.automatic) return;
          diagnostics.unsubscribe("surelock:extend", onExtend);
          resolve();
        };
        diagnostics.subscribe("surelock:extend", onExtend);
      });
      const lease = await short.mutex("otel:renewed").acquire();
      await within(5_000, renewed, "a watchdog renewal");
      await lease.release();
      const late = await histogram("surelock.renewal.lateness", "otel:renewed");
      assert.ok(late.count >= 1);
      assert.ok((late.min ?? -1) >= 0, "lateness is never negative");
    } finally {
      await short.close();
    }
  });

  it("after the returned function is called, nothing is recorded", async () => {
    stop();
    await locks.withLock("otel:after-stop", () => {});
    assert.deepEqual(named("surelock.hold", "otel:after-stop"), []);
    assert.equal(await sum("surelock.acquires", "otel:after-stop"), 0);
    // Instrument again for the hooks that follow.
    stop = instrumentSurelock({ tracer: tracerProvider.getTracer("surelock"), meter: meterProvider.getMeter("surelock"), metricKey: (k) => k });
  });
});
