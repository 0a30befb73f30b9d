/**
 * Shared pieces of the behaviour tests: clients against the topology helper's servers, a
 * Surelock factory that closes what it made, the "no key without a TTL" check, and waits
 * that end on an event or fail at a deadline (never a sleep that hopes).
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { Redis, type RedisOptions } from "ioredis";
import { Surelock, type SurelockOptions } from "../../src/index.js";
import { after, afterEach, before } from "node:test";
import { startStandalone, type HostPort, type RedisServer } from "./redis-topology.js";

/** An ioredis client that fails within a bounded time instead of queueing forever. */
export function client(target: HostPort, options: RedisOptions = {}): Redis {
  const redis = new Redis({
    host: target.host,
    port: target.port,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: () => 50,
    ...options,
  });
  redis.on("error", () => {});
  return redis;
}

/** Makes Surelock instances (and their clients) and closes all of them in `cleanup`. */
export class Harness {
  readonly #closers: (() => Promise<unknown> | void)[] = [];
  readonly server: RedisServer;

  constructor(server: RedisServer) {
    this.server = server;
  }

  client(options?: RedisOptions, target: HostPort = this.server): Redis {
    const redis = client(target, options);
    this.#closers.push(() => redis.disconnect());
    return redis;
  }

  locks(options: Partial<SurelockOptions> = {}, target: HostPort = this.server): Surelock {
    const locks = new Surelock({ redis: options.redis ?? this.client(undefined, target), ...options });
    this.#closers.unshift(() => locks.close());
    return locks;
  }

  onCleanup(fn: () => Promise<unknown> | void): void {
    this.#closers.push(fn);
  }

  async cleanup(): Promise<void> {
    const closers = this.#closers.splice(0);
    for (const close of closers) await close();
  }
}

/** Fails if any surelock key on the server lacks an expiry: the invariant every test must keep. */
export async function assertEveryKeyExpires(server: RedisServer, prefix = "surelock"): Promise<void> {
  const keys = (await server.command("KEYS", `${prefix}:*`)) as string[];
  for (const key of keys) {
    const pttl = await server.command("PTTL", key);
    assert.notEqual(pttl, -1, `${key} has no TTL`);
  }
}

/** Resolves with `promise`, or rejects if it takes longer than `ms` (a hang is a failure). */
export function within<T>(ms: number, promise: Promise<T>, what = "operation"): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Resolves with the signal's reason once it aborts; rejects after `ms`. */
export function aborted(signal: AbortSignal, ms: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return within(ms, new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true })), "abort");
}

/** Polls `check` until it returns true (for state only visible in Redis); rejects after `ms`. */
export async function eventually(check: () => Promise<boolean> | boolean, ms: number, what = "condition"): Promise<void> {
  const until = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() > until) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves when an acquire of `key` starts waiting (its `surelock:wait` start event); rejects after `ms`. */
export function startsWaiting(key: string, ms = 5_000): Promise<void> {
  let listener: ((message: unknown) => void) | undefined;
  const started = new Promise<void>((resolve) => {
    listener = (message) => {
      const m = message as { key: string; phase: string };
      if (m.key === key && m.phase === "start") resolve();
    };
    diagnostics.subscribe("surelock:wait", listener);
  });
  return within(ms, started, `an acquire of ${key} to wait`).finally(() => diagnostics.unsubscribe("surelock:wait", listener!));
}

/** Proves that something did NOT happen for `ms`: the only legitimate fixed sleep. */
export const quietFor = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `INFO commandstats` calls of one command. */
export async function commandCalls(server: RedisServer, command: string): Promise<number> {
  const stats = await server.info("commandstats");
  const entry = stats[`cmdstat_${command.toLowerCase()}`];
  const match = entry?.match(/calls=(\d+)/);
  return match ? Number(match[1]) : 0;
}

/** `INFO commandstats` microseconds per call of one command. */
export async function commandUsec(server: RedisServer, command: string): Promise<number> {
  const stats = await server.info("commandstats");
  const match = stats[`cmdstat_${command.toLowerCase()}`]?.match(/usec_per_call=([\d.]+)/);
  return match ? Number(match[1]) : 0;
}

/**
 * A suite on a standalone redis-server of its own: `use` gets the server and a Harness on it
 * before the first test; after each test the Harness is cleaned up, every key must expire, and the
 * server is flushed; the server stops after the last test.
 */
export function standaloneSuite(use: (server: RedisServer, h: Harness) => void): void {
  let server: RedisServer | undefined;
  let h: Harness | undefined;
  before(async () => {
    server = await startStandalone();
    h = new Harness(server);
    use(server, h);
  });
  afterEach(async () => {
    if (!server || !h) return;
    await h.cleanup();
    await assertEveryKeyExpires(server);
    await server.command("FLUSHALL");
  });
  after(() => server?.stop());
}
