/** MemoryRedis's ioredis-shaped methods: the calls an app makes on its one client, answered as ioredis answers them. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Surelock } from "../../src/index.js";
import { MemoryRedis } from "../../src/testing/index.js";

describe("MemoryRedis, ioredis-shaped", () => {
  it("answers an app's data calls as ioredis does, on the client surelock uses too", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    assert.equal(await redis.set("k", "v", "PX", 10_000), "OK");
    assert.equal(await redis.get("k"), "v");
    assert.equal(await redis.set("k", "w", "NX"), null);
    assert.equal(await redis.incrby("n", 5), 5);
    assert.equal(await redis.hset("h", { f: 1, g: "two" }), 2);
    assert.deepEqual(await redis.hgetall("h"), { f: "1", g: "two" });
    assert.deepEqual(await redis.hgetall("none"), {});
    assert.equal(await redis.rpush("l", ["a", "b"], "c"), 3);
    assert.deepEqual(await redis.lrange("l", 0, -1), ["a", "b", "c"]);
    assert.equal(await redis.zadd("z", 2, "b", 1, "a"), 2);
    assert.deepEqual(await redis.zrange("z", 0, -1, "WITHSCORES"), ["a", "1", "b", "2"]);
    assert.equal(await redis.del(["k", "n"], "h"), 3);
    assert.equal(await redis.exists("k"), 0);
    assert.equal(await redis.call("HSET", "h2", "f", 1), 1);
    assert.equal(await redis.publish("c", "m"), 0);
    // eval in both shapes: surelock's (keys and arguments as arrays) and ioredis's (numKeys, then keys and arguments).
    assert.deepEqual(await redis.eval("return {KEYS[1], ARGV[1]}", ["a"], ["b"]), ["a", "b"]);
    assert.deepEqual(await redis.eval("return {KEYS[1], ARGV[1], #ARGV}", 1, "a", "b", 3), ["a", "b", 2]);
    const sha = String(await redis.call("SCRIPT", "LOAD", "return ARGV[1] .. KEYS[1]"));
    assert.equal(await redis.evalsha(sha, 1, "k", "v"), "vk");
    await assert.rejects(redis.call("SCAN", 0), /'SCAN' is not supported by MemoryRedis/);
    // Its locks and its data on one client.
    assert.equal(await locks.withLock("k", async () => redis.incr("under-lock")), 1);
    assert.equal(await redis.quit(), "OK");
    redis.disconnect();
    await locks.close();
  });
});
