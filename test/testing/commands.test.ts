/**
 * MemoryRedis commands that the differential test cannot compare one to one (pub/sub, server
 * information, what the double does not support) or that depend on the injected clock.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryRedis, MemoryRedisServer, VirtualClock } from "../../src/testing/index.js";
import { setScriptBudget } from "../../src/testing/redis/scripting.js";

describe("MemoryRedis commands", () => {
  it("expires keys lazily on the injected clock: alive at its instant, gone one ms later", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock });
    await redis.command(["SET", "k", "v", "PX", 100]);
    assert.equal(await redis.command(["PTTL", "k"]), 100);
    await clock.advance(100);
    assert.equal(await redis.command(["GET", "k"]), "v");
    assert.equal(await redis.command(["PTTL", "k"]), 0);
    await clock.advance(1);
    assert.equal(await redis.command(["GET", "k"]), null);
    assert.equal(await redis.command(["EXISTS", "k"]), 0);
  });

  it("TIME reads the clock plus the epoch", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock, epochMs: 1_800_000_000_000 });
    await clock.advance(1_234.5);
    assert.deepEqual(await redis.command(["TIME"]), ["1800000001", "234500"]);
  });

  it("a command, or an option, the double lacks answers that it is not supported, to a client and to a script alike", async () => {
    const redis = new MemoryRedis();
    for (const args of [["MULTI"], ["SCAN", 0], ["CLIENT", "ID"], ["XREAD", "STREAMS", "s", 0], ["SET", "k", "v", "PXAT", 1], ["ZADD", "z", "GT", 1, "a"],
      ["ZRANGE", "z", 0, 1, "REV"], ["LPOS", "l", "a", "RANK", 1], ["PEXPIRE", "k", 10, "NX"], ["XADD", "s", "MAXLEN", 1, "*", "f", "v"], ["NOSUCH"]]) {
      await assert.rejects(redis.command(args), (e: Error) => /^ERR .* is not supported by MemoryRedis/.test(e.message), args.join(" "));
    }
    await assert.rejects(redis.eval("return redis.call('SCAN', 0)", [], []), /'SCAN' is not supported by MemoryRedis/);
    assert.deepEqual(await redis.eval("return redis.pcall('MULTI')", [], []).catch((e: Error) => e.message), "ERR 'MULTI' is not supported by MemoryRedis " +
      "(surelock/testing has what surelock's scripts, its fencing guard and docs/testing.md use)");
  });

  it("PUBLISH counts subscribers and delivers on a later turn, in order", async () => {
    const redis = new MemoryRedis();
    const sub = await redis.createSubscriber();
    const got: string[] = [];
    sub.onMessage((channel, message) => got.push(`${channel}:${message}`));
    await sub.subscribe("c");
    assert.equal(await redis.command(["PUBLISH", "c", "1"]), 1);
    assert.equal(await redis.command(["SPUBLISH", "c", "x"]), 0);
    assert.equal(await redis.command(["PUBLISH", "c", "2"]), 1);
    assert.equal(await redis.command(["PUBLISH", "other", "3"]), 0);
    await new VirtualClock().settle();
    assert.deepEqual(got, ["c:1", "c:2"]);
    await sub.unsubscribe("c");
    assert.equal(await redis.command(["PUBLISH", "c", "4"]), 0);
    await sub.close();
    await assert.rejects(redis.command(["SUBSCRIBE", "c"]), /only available on a subscriber connection/);
  });

  it("answers INFO, CONFIG GET, WAIT and SCRIPT as configured", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock, version: "7.2.4", replicas: 1, config: { appendonly: "yes" } });
    const info = String(await redis.command(["INFO", "server"]));
    assert.match(info, /^# Server\r\nredis_version:7\.2\.4\r\n/);
    assert.match(String(await redis.command(["INFO", "replication"])), /connected_slaves:1/);
    assert.deepEqual(await redis.command(["CONFIG", "GET", "appendonly"]), ["appendonly", "yes"]);
    assert.deepEqual(await redis.command(["CONFIG", "GET", "maxmemory*"]), ["maxmemory", "0", "maxmemory-policy", "noeviction"]);
    assert.equal(await redis.command(["WAIT", 1, 100]), 1);
    // Two replicas wanted, one there: WAIT answers 1 after its timeout, on the server's clock.
    let answered: unknown;
    const waiting = redis.command(["WAIT", 2, 100]).then((n) => { answered = n; });
    await clock.advance(99);
    assert.equal(answered, undefined);
    await clock.advance(1);
    await waiting;
    assert.equal(answered, 1);
    const sha = String(await redis.command(["SCRIPT", "LOAD", "return 1"]));
    assert.deepEqual(await redis.command(["SCRIPT", "EXISTS", sha, "nope"]), [1, 0]);
    assert.equal(await redis.evalsha(sha, [], []), 1);
    await redis.command(["SCRIPT", "FLUSH"]);
    await assert.rejects(redis.evalsha(sha, [], []), /^ReplyError: NOSCRIPT No matching script\. Please use EVAL\./);
  });

  it("stops a script that runs away, even one that catches errors, and the server goes on", async () => {
    await MemoryRedisServer.ready();
    setScriptBudget(5);
    try {
      const redis = new MemoryRedis();
      for (const loop of ["while true do end", "while true do pcall(function() while true do end end) end"]) {
        await assert.rejects(redis.eval(loop, [], []), /ERR MemoryRedis stopped a script that ran too long/, loop);
      }
      assert.equal(await redis.eval("local n = 0 for i = 1, 1000 do n = n + i end return n", [], []), 500500);
    } finally {
      setScriptBudget(2_000);
    }
  });

  it("carries UTF-8 text through as bytes, as a socket would", async () => {
    const redis = new MemoryRedis();
    await redis.command(["SET", "k", "caf\u00e9 \u{1f512}"]);
    assert.equal(await redis.command(["STRLEN", "k"]).catch(() => "no STRLEN"), "no STRLEN");
    assert.equal(await redis.eval("return #redis.call('GET', KEYS[1])", ["k"], []), 10);
    assert.equal(await redis.command(["GET", "k"]), "caf\u00e9 \u{1f512}");
  });
});
