/**
 * What docs/testing.md says about ioredis-mock, checked against the installed version: why it
 * cannot stand in for Redis under surelock, and why MemoryRedis exists. If ioredis-mock changes,
 * this test fails and the page must be rewritten.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import RedisMock from "ioredis-mock";
import { InvalidArgumentError, Surelock, type RedisAdapter, type RedisArg } from "../../src/index.js";

type Mock = InstanceType<typeof RedisMock>;

/** The best adapter a user could write over ioredis-mock's named methods. */
function adapterOver(redis: Mock): RedisAdapter {
  const named = redis as unknown as Record<string, (...args: RedisArg[]) => Promise<unknown>>;
  return {
    name: "ioredis-mock",
    cluster: false,
    evalsha: (sha, keys, args) => redis.evalsha(sha, keys.length, ...keys, ...args),
    eval: (lua, keys, args) => redis.eval(lua, keys.length, ...keys, ...args),
    command: ([name, ...args]) => (named[String(name).toLowerCase()] as (...a: RedisArg[]) => Promise<unknown>).apply(redis, args),
    createSubscriber: async () => ({
      subscribe: async () => {}, unsubscribe: async () => {}, onMessage: () => {}, onReconnect: () => {}, close: async () => {},
    }),
  };
}

describe("ioredis-mock under surelock", () => {
  it("is not recognised as an ioredis client: it has no call() and no status", () => {
    const redis = new RedisMock();
    assert.equal(typeof (redis as unknown as { call?: unknown }).call, "undefined");
    assert.throws(() => new Surelock({ redis }), InvalidArgumentError);
  });

  it("has no SCRIPT command, and EVAL does not cache: EVALSHA of a script just run by EVAL is NOSCRIPT", async () => {
    const redis = new RedisMock();
    assert.throws(() => (redis as unknown as { script(...a: string[]): unknown }).script("LOAD", "return 1"), /Unsupported command: "script"/);
    assert.equal(await redis.eval("return 7", 0), 7);
    await assert.rejects(redis.evalsha("f1f68ad4e64ff49b4a8b51dd4cb4b4dbd1fe6a2b", 0), /NOSCRIPT/);
  });

  it("runs another Lua (fengari, 5.3): no error_reply, open globals, and Redis's reply conversions missing", async () => {
    const redis = new RedisMock();
    await assert.rejects(redis.eval("return redis.error_reply('E')", 0), /field 'error_reply'/);
    assert.equal(await redis.eval("x = 1 return x", 0), 1, "Redis 7: Attempt to modify a readonly table");
    assert.equal(await redis.eval("return 3.9", 0), 3.9, "Redis: the integer 3");
    assert.equal(await redis.eval("return false", 0), false, "Redis: a nil reply");
    const table = await redis.eval("return {1, nil, 3}", 0);
    assert.ok(!Array.isArray(table), "Redis: [1]; ioredis-mock hands over a Lua proxy object");
  });

  it("keeps integers in 32 bits: arithmetic on the server clock overflows, and surelock's first acquire fails", async () => {
    const redis = new RedisMock();
    const micros = await (redis as unknown as { eval(script: string, keys: number): Promise<unknown> })
      .eval("local t = redis.call('TIME') return tonumber(t[1]) * 1000000 + tonumber(t[2])", 0);
    assert.ok(typeof micros === "number" && micros < 2 ** 31, `the server clock in microseconds came out as ${String(micros)}`);
    const locks = new Surelock({ redis: adapterOver(redis), commandTimeout: 2_000 });
    await assert.rejects(locks.mutex("orders:1").acquire({ timeout: 500 }), { code: "ERR_SURELOCK_SCRIPT" });
    await locks.close();
  });

  it("stores numbers passed to redis.call('HSET') as numbers (Redis stores strings)", async () => {
    const redis = new RedisMock();
    await (redis as unknown as { eval(script: string, keys: number): Promise<unknown> }).eval("redis.call('HSET', 'h', 't', 5) return 1", 0);
    const hash = await redis.hgetall("h");
    assert.equal(typeof (hash as Record<string, unknown>).t, "number", "Redis stores every field as a string");
  });
});
