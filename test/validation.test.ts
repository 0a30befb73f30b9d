import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InvalidArgumentError, Surelock } from "../src/index.js";
import { commandCalls, Harness } from "./helpers/fixtures.js";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";

/** Asserts InvalidArgumentError naming `argument`. */
const invalid = (argument: string) => (e: unknown): boolean => {
  assert.ok(e instanceof InvalidArgumentError, `expected InvalidArgumentError, got ${String(e)}`);
  assert.equal(e.code, "ERR_SURELOCK_INVALID_ARGUMENT");
  assert.equal(e.argument, argument);
  assert.match(e.message, new RegExp(argument.replace(".", "\\.")));
  return true;
};

describe("bad input is refused with InvalidArgumentError before any I/O", () => {
  let server: RedisServer;
  let h: Harness;
  let locks: Surelock;
  before(async () => { server = await startStandalone(); h = new Harness(server); locks = h.locks(); });
  after(async () => { await h.cleanup(); await server.stop(); });

  const badDurations: [string, unknown][] = [
    ["NaN", Number.NaN], ["negative", -1], ["fractional", 1.5], ["huge", 2 ** 31], ["a string", "100"],
    ["Infinity as ttl", Infinity],
  ];

  it("keys: empty, not a string, too long", () => {
    for (const key of ["", 42, null, undefined, {}, "x".repeat(2_000)]) {
      assert.throws(() => locks.mutex(key as string), invalid("key"));
      assert.throws(() => locks.readWriteLock(key as string), invalid("key"));
      assert.throws(() => locks.semaphore(key as string, { permits: 1 }), invalid("key"));
    }
  });

  it("ttl: NaN, negative, zero, fractional, huge, non-numbers", () => {
    for (const [, ttl] of [...badDurations, ["zero", 0] as [string, unknown]]) {
      assert.throws(() => locks.mutex("k", { ttl: ttl as number }), invalid("options.ttl"));
      assert.throws(() => new Surelock({ redis: h.client(), ttl: ttl as number }), invalid("options.ttl"));
    }
  });

  it("timeout: NaN, negative, fractional, huge; 0 and Infinity are fine", async () => {
    const mutex = locks.mutex("k");
    for (const [name, timeout] of badDurations.filter(([n]) => n !== "Infinity as ttl")) {
      await assert.rejects(async () => mutex.acquire({ timeout: timeout as number }), invalid("options.timeout"), name);
      await assert.rejects(async () => mutex.withLock(() => 1, { timeout: timeout as number }), invalid("options.timeout"), name);
    }
    const lease = await mutex.acquire({ timeout: 0 });
    await lease.release();
    await (await mutex.acquire({ timeout: Infinity })).release();
  });

  it("unknown option names are errors, not silently ignored defaults", async () => {
    assert.throws(() => locks.mutex("k", { tll: 5 } as never), invalid("options.tll"));
    await assert.rejects(locks.mutex("k").acquire({ timeuot: 5 } as never), invalid("options.timeuot"));
    await assert.rejects(locks.mutex("k").tryAcquire({ timeout: 5 } as never), invalid("options.timeout"));
    assert.throws(() => new Surelock({ redis: h.client(), prefx: "x" } as never), invalid("options.prefx"));
  });

  it("other arguments: owner, signal, permits, prefix, redis, work, extend ttl", async () => {
    const mutex = locks.mutex("k");
    await assert.rejects(mutex.acquire({ owner: "" }), invalid("options.owner"));
    await assert.rejects(mutex.acquire({ signal: {} as AbortSignal }), invalid("options.signal"));
    for (const permits of [0, -1, 1.5, Number.NaN, "2"]) {
      assert.throws(() => locks.semaphore("s", { permits: permits as number }), invalid("options.permits"));
    }
    assert.throws(() => locks.semaphore("s", undefined as never), invalid("options.permits"));
    assert.throws(() => new Surelock({ redis: h.client(), prefix: "a{b}" }), invalid("options.prefix"));
    assert.throws(() => new Surelock({ redis: {} as never }), invalid("options.redis"));
    assert.throws(() => new Surelock({ redis: [] }), invalid("options.redis"));
    assert.throws(() => new Surelock(undefined as never), invalid("options"));
    await assert.rejects(mutex.withLock("not a function" as never), invalid("work"));
    const lease = await mutex.acquire();
    await assert.rejects(lease.extend(0), invalid("ttl"));
    await assert.rejects(lease.extend(Number.NaN), invalid("ttl"));
    await lease.release();
  });

  it("elections and latches: name, ttl, value, count, id, signal, timeout, unknown options", async () => {
    assert.throws(() => locks.election(""), invalid("name"));
    assert.throws(() => locks.election("e", { ttl: 5 }), invalid("options.ttl"));
    assert.throws(() => locks.election("e", { tll: 5 } as never), invalid("options.tll"));
    const election = locks.election("e");
    await assert.rejects(election.campaign({ value: 7 as never }), invalid("options.value"));
    await assert.rejects(election.campaign({ value: "x".repeat(65_537) }), invalid("options.value"));
    await assert.rejects(election.campaign({ value: "\ud800" }), invalid("options.value"));
    await assert.rejects(election.campaign({ timeout: -1 }), invalid("options.timeout"));
    await assert.rejects(election.campaign({ signal: {} as AbortSignal }), invalid("options.signal"));
    await assert.rejects(election.campaign({ owner: "me" } as never), invalid("options.owner"));
    await assert.rejects(election.proclaim(null as never), invalid("value"));
    assert.throws(() => election.observe({ signal: "no" } as never), invalid("options.signal"));
    for (const count of [0, -1, 1.5, Number.NaN, "2", 1_000_001]) {
      assert.throws(() => locks.latch("l", { count: count as number }), invalid("options.count"));
    }
    assert.throws(() => locks.latch("l", undefined as never), invalid("options.count"));
    assert.throws(() => locks.latch("l", { count: 2, ttl: 0 }), invalid("options.ttl"));
    const latch = locks.latch("l", { count: 2 });
    await assert.rejects(latch.countDown({ id: "" }), invalid("options.id"));
    await assert.rejects(latch.wait({ timeout: 1.5 }), invalid("options.timeout"));
  });

  it("nothing reaches Redis for a refused call", async () => {
    const before = await commandCalls(server, "evalsha") + await commandCalls(server, "eval");
    for (const bad of [{ timeout: -1 }, { owner: 7 }, { nope: 1 }]) {
      await assert.rejects(locks.mutex("quiet").acquire(bad as never), InvalidArgumentError);
    }
    assert.throws(() => locks.mutex(""), InvalidArgumentError);
    await assert.rejects(locks.election("quiet").campaign({ value: 1 } as never), InvalidArgumentError);
    await assert.rejects(locks.latch("quiet", { count: 1 }).countDown({ id: 5 } as never), InvalidArgumentError);
    const after = await commandCalls(server, "evalsha") + await commandCalls(server, "eval");
    assert.equal(after, before);
    assert.deepEqual(await server.command("KEYS", "surelock:*quiet*"), []);
  });
});
