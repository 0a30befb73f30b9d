/**
 * MemoryRedis commands that the differential test cannot compare one to one (connection state,
 * pub/sub, SCAN cursors, server information) or that depend on the injected clock.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryRedis, VirtualClock } from "../../src/testing/index.js";

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

  it("MULTI queues and EXEC runs in order; a command that cannot be queued aborts EXEC", async () => {
    const redis = new MemoryRedis();
    assert.equal(await redis.command(["MULTI"]), "OK");
    assert.equal(await redis.command(["INCR", "n"]), "QUEUED");
    assert.equal(await redis.command(["INCR", "n"]), "QUEUED");
    assert.deepEqual(await redis.command(["EXEC"]), [1, 2]);
    await redis.command(["MULTI"]);
    await assert.rejects(redis.command(["GET"]), /wrong number of arguments/);
    await assert.rejects(redis.command(["EXEC"]), /^ReplyError: EXECABORT/);
    await assert.rejects(redis.command(["EXEC"]), /EXEC without MULTI/);
    // Another connection has its own transaction state.
    await redis.command(["MULTI"]);
    assert.equal(await redis.duplicate().command(["GET", "n"]), "2");
    assert.equal(await redis.command(["DISCARD"]), "OK");
  });

  it("SCAN visits every key that exists throughout, even when keys are deleted between calls", async () => {
    const redis = new MemoryRedis();
    for (let i = 0; i < 50; i++) await redis.command(["SET", `k${i}`, i]);
    await redis.command(["HSET", "h", "f", "v"]);
    const seen = new Set<string>();
    let cursor = "0";
    let calls = 0;
    do {
      const [next, keys] = (await redis.command(["SCAN", cursor, "COUNT", 7, "MATCH", "k*"])) as [string, string[]];
      for (const k of keys) seen.add(k);
      if (calls++ === 2) for (let i = 40; i < 45; i++) await redis.command(["DEL", `k${i}`]);
      cursor = next;
    } while (cursor !== "0");
    for (let i = 0; i < 50; i++) if (i < 40 || i >= 45) assert.ok(seen.has(`k${i}`), `k${i} not visited`);
    assert.ok(!seen.has("h"));
    assert.deepEqual(await redis.command(["SCAN", "0", "TYPE", "hash", "COUNT", 1000]), ["0", ["h"]]);
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

  it("answers INFO, CONFIG GET, CLIENT, WAIT and SCRIPT as configured", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock, version: "7.2.4", replicas: 1, config: { appendonly: "yes" } });
    const info = String(await redis.command(["INFO", "server"]));
    assert.match(info, /^# Server\r\nredis_version:7\.2\.4\r\n/);
    assert.match(String(await redis.command(["INFO", "replication"])), /connected_slaves:1/);
    assert.deepEqual(await redis.command(["CONFIG", "GET", "appendonly"]), ["appendonly", "yes"]);
    assert.deepEqual(await redis.command(["CONFIG", "GET", "maxmemory*"]), ["maxmemory", "0", "maxmemory-policy", "noeviction"]);
    assert.equal(await redis.command(["CLIENT", "SETNAME", "me"]), "OK");
    assert.equal(await redis.command(["CLIENT", "GETNAME"]), "me");
    assert.equal(typeof (await redis.command(["CLIENT", "ID"])), "number");
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

  it("carries UTF-8 text through as bytes, as a socket would", async () => {
    const redis = new MemoryRedis();
    await redis.command(["SET", "k", "caf\u00e9 \u{1f512}"]);
    assert.equal(await redis.command(["STRLEN", "k"]).catch(() => "no STRLEN"), "no STRLEN");
    assert.equal(await redis.eval("return #redis.call('GET', KEYS[1])", ["k"], []), 10);
    assert.equal(await redis.command(["GET", "k"]), "caf\u00e9 \u{1f512}");
  });
});
