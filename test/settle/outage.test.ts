/**
 * An outage told as an outage: a waiter whose Redis is killed gives up at its acquire timeout
 * (the instance's default, or its own) with a LockTimeoutError whose cause is the ConnectionError;
 * a waiter with `timeout: Infinity` keeps waiting, its wait channel says Redis does not answer,
 * and it gets the lock once Redis is back; the first call on a dead Redis costs one command
 * timeout, version check included; wrong credentials and ACLs are an AuthError.
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis, type RedisOptions } from "ioredis";
import { createClient } from "redis";
import { AuthError, ConnectionError, LockTimeoutError, ScriptError, Surelock, type WaitMessage } from "../../src/index.js";
import { MemoryRedis, VirtualClock } from "../../src/testing/index.js";
import { Harness, startsWaiting, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { rejection, settles } from "./support.js";

/** Collects the surelock:wait messages of `key` until the returned function is called. */
function waitEvents(key: string): { events: WaitMessage[]; next(phase: WaitMessage["phase"], ms: number): Promise<WaitMessage>; stop(): void } {
  const events: WaitMessage[] = [];
  const wanted: [WaitMessage["phase"], (m: WaitMessage) => void][] = [];
  const listener = (message: unknown): void => {
    const m = message as WaitMessage;
    if (m.key !== key) return;
    events.push(m);
    for (const [phase, resolve] of wanted) if (phase === m.phase) resolve(m);
  };
  diagnostics.subscribe("surelock:wait", listener);
  return {
    events,
    next: (phase, ms) => within(ms, new Promise<WaitMessage>((resolve) => wanted.push([phase, resolve])), `a wait event "${phase}"`),
    stop: () => diagnostics.unsubscribe("surelock:wait", listener),
  };
}

describe("a wait through an outage (Redis killed)", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => {
    await h.cleanup();
    if (!server.alive) await server.restart();
  });
  after(async () => { await server.stop(); });

  it("the instance's acquireTimeout bounds a waiter that names none; the timeout's cause is the ConnectionError", async () => {
    const holder = await h.locks({ ttl: 10_000 }).mutex("outage").acquire();
    const locks = h.locks({ acquireTimeout: 2_500, commandTimeout: 300 });
    assert.equal(locks.acquireTimeout, 2_500);
    const waiting = startsWaiting("outage");
    const started = performance.now();
    const pending = settles(locks.mutex("outage").acquire(), 6_000, started);
    await waiting;
    await server.kill();
    const s = await pending;
    const error = rejection(s);
    assert.ok(error instanceof LockTimeoutError, String(error));
    assert.equal(error.timeoutMs, 2_500);
    assert.ok(s.atMs >= 2_400 && s.atMs < 3_500, `rejected after ${s.atMs.toFixed(0)} ms, timeout 2 500 ms`);
    assert.ok(error.cause instanceof ConnectionError, `cause: ${String(error.cause)}`);
    assert.match(error.message, /Redis did not answer/);
    void holder;
  });

  it("timeout: Infinity keeps waiting through the outage, the wait channel says Redis does not answer, and the lock comes once it is back", async () => {
    const holderSide = h.locks({ ttl: 1_500 });
    const holder = await holderSide.mutex("patient").acquire();
    const locks = h.locks({ acquireTimeout: 1_000, commandTimeout: 300 });
    const seen = waitEvents("patient");
    try {
      const waiting = startsWaiting("patient");
      const pending = settles(locks.mutex("patient").acquire({ timeout: Infinity }), 30_000);
      await waiting;
      const unreachable = seen.next("unreachable", 10_000);
      await server.kill();
      const m = await unreachable;
      assert.ok(m.error instanceof ConnectionError, String(m.error));
      assert.equal(typeof m.waitedMs, "number");
      // Waited past the instance's acquireTimeout (1 s) with Redis down: still pending.
      await new Promise((r) => setTimeout(r, 1_500));
      assert.ok(!seen.events.some((e) => e.phase === "end"), "the wait did not end");
      const reachable = seen.next("reachable", 15_000);
      await server.restart();
      await reachable;
      const s = await pending;
      assert.ok(s.ok, `not served after the outage: ${String((s as { error?: unknown }).error)}`);
      assert.deepEqual(seen.events.map((e) => e.phase).filter((p, i, all) => all.indexOf(p) === i), ["start", "unreachable", "reachable", "end"]);
      await s.value.release();
      void holder;
    } finally {
      seen.stop();
    }
  });

  it("a timeout shorter than the command timeout, Redis not answering: LockTimeoutError with a ConnectionError cause, not contention", async () => {
    const locks = h.locks({ commandTimeout: 2_000 });
    await (await locks.mutex("warm").acquire()).release();
    await server.pause();
    try {
      const s = await settles(locks.mutex("short").acquire({ timeout: 300 }), 3_000);
      const error = rejection(s);
      assert.ok(error instanceof LockTimeoutError, String(error));
      assert.ok(error.cause instanceof ConnectionError, `cause: ${String(error.cause)}`);
    } finally {
      await server.resume();
    }
  });

  it("contention stays contention: a timeout on a busy lock with Redis answering has no cause", async () => {
    const locks = h.locks();
    const holder = await locks.mutex("busy").acquire();
    const error = rejection(await settles(h.locks().mutex("busy").acquire({ timeout: 300 }), 3_000));
    assert.ok(error instanceof LockTimeoutError, String(error));
    assert.equal(error.cause, undefined);
    await holder.release();
  });
});

describe("the first call on a dead Redis costs one command timeout", () => {
  it("tryAcquire() and acquire() on a Redis that never answered reject with ConnectionError within the command timeout + 10 %", async () => {
    const dead = await startStandalone();
    await dead.pause();
    const redis = new Redis({ host: dead.host, port: dead.port, lazyConnect: false, maxRetriesPerRequest: null });
    redis.on("error", () => {});
    try {
      for (const call of [(l: Surelock) => l.mutex("k").tryAcquire(), (l: Surelock) => l.mutex("k").acquire()]) {
        const locks = new Surelock({ redis, commandTimeout: 1_000 });
        const s = await settles(call(locks), 5_000);
        const error = rejection(s);
        assert.ok(error instanceof ConnectionError, String(error));
        assert.ok(s.atMs < 1_100, `rejected after ${s.atMs.toFixed(0)} ms with a command timeout of 1 000 ms`);
        assert.match(error.message, /no reply within 1000 ms/);
        await locks.close();
      }
    } finally {
      redis.disconnect();
      await dead.stop();
    }
  });
});

describe("a node-redis client that was never connected", () => {
  it("rejects with a ConnectionError that says to connect() it first (node-redis says only \"The client is closed\")", async () => {
    const client = createClient({ socket: { host: "127.0.0.1", port: 1 } });
    const locks = new Surelock({ redis: client, commandTimeout: 1_000 });
    try {
      const error = rejection(await settles(locks.mutex("k").tryAcquire(), 3_000));
      assert.ok(error instanceof ConnectionError, String(error));
      assert.match(error.message, /connect\(\)/);
    } finally {
      await locks.close();
    }
  });
});

describe("the default acquire timeout (virtual clock)", () => {
  it("is 30 s: a waiter that names no timeout, whose Redis stops answering, rejects at 30 s with the ConnectionError as cause", async () => {
    const clock = new VirtualClock();
    const memory = new MemoryRedis({ clock });
    const holderSide = new Surelock({ redis: memory.duplicate(), clock, ttl: 60_000 });
    const waiterRedis = memory.duplicate();
    const locks = new Surelock({ redis: waiterRedis, clock });
    assert.equal(locks.acquireTimeout, 30_000);
    const holder = await holderSide.mutex("k").acquire();
    let settledAt: number | undefined;
    let failure: unknown;
    const startedAt = clock.now();
    const pending = locks.mutex("k").acquire().then(
      () => { settledAt = clock.now(); },
      (error: unknown) => { settledAt = clock.now(); failure = error; },
    );
    await clock.advance(100);
    // From now on this process's connection gets no reply: its refreshes time out.
    waiterRedis.intercept(() => ({ kind: "drop-reply", then: "hang" }));
    await clock.advance(29_800);
    assert.equal(settledAt, undefined, "still waiting before 30 s");
    await clock.advance(200);
    await pending;
    assert.equal(settledAt, startedAt + 30_000);
    assert.ok(failure instanceof LockTimeoutError, String(failure));
    assert.equal(failure.timeoutMs, 30_000);
    assert.ok(failure.cause instanceof ConnectionError, `cause: ${String(failure.cause)}`);
    await holder.release();
    waiterRedis.intercept(undefined);
    const closing = Promise.all([locks.close(), holderSide.close()]);
    await clock.advance(10_000);
    await closing;
  });
});

describe("credentials and ACLs: AuthError", () => {
  let server: RedisServer;
  before(async () => {
    server = await startStandalone();
    await server.command("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval");
    // Last: the helper's own commands go unauthenticated.
    await server.command("CONFIG", "SET", "requirepass", "right");
  });
  after(async () => { await server.stop(); });

  async function failure(options: RedisOptions): Promise<unknown> {
    const redis = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1, retryStrategy: () => null, ...options });
    redis.on("error", () => {});
    const locks = new Surelock({ redis, commandTimeout: 2_000 });
    try {
      return rejection(await settles(locks.mutex("auth").tryAcquire(), 5_000));
    } finally {
      await locks.close();
      redis.disconnect();
    }
  }

  it("a wrong password, no password, and an ACL user without EVALSHA are each an AuthError (ERR_SURELOCK_AUTH), not a ScriptError", async () => {
    const wrong = await failure({ password: "wrong" });
    const none = await failure({});
    const acl = await failure({ username: "noeval", password: "pw" });
    for (const [what, error] of [["wrong password", wrong], ["no password", none], ["ACL", acl]] as const) {
      assert.ok(error instanceof AuthError, `${what}: ${String(error)}`);
      assert.ok(!(error instanceof ScriptError), what);
      assert.equal(error.code, "ERR_SURELOCK_AUTH");
      assert.ok(error.cause instanceof Error, `${what}: the client's error is the cause`);
    }
    assert.match((acl as AuthError).message, /ACL user needs/);
  });
});
