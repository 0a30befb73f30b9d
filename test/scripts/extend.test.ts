import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("extend.lua and is-held.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());
  const k = () => s.keys("k");
  const take = async (owner: string, ttl = 1_000) =>
    ((await s.run("acquire", acquireKeys(k()), acquireArgs(owner, ttl))) as [number, number])[1];

  it("extend moves the owner's expiry", async () => {
    const token = await take("a");
    assert.equal(await s.run("extend", [k().lock], ["a", String(token), 60_000]), 1);
    assert.ok((await s.redis.pttl(k().lock)) > 50_000);
  });

  it("extend by another owner or an older token is refused and changes nothing", async () => {
    const token = await take("a");
    assert.equal(await s.run("extend", [k().lock], ["b", String(token), 60_000]), -1);
    assert.equal(await s.run("extend", [k().lock], ["a", String(token - 1), 60_000]), -1);
    assert.ok((await s.redis.pttl(k().lock)) <= 1_000);
  });

  it("extend of a lock that is gone answers 0 and never revives it", async () => {
    assert.equal(await s.run("extend", [k().lock], ["a", "1", 60_000]), 0);
    assert.equal(await s.redis.exists(k().lock), 0);
  });

  it("is-held answers held / taken / gone without writing", async () => {
    const token = await take("a");
    const pttl = await s.redis.pttl(k().lock);
    assert.equal(await s.run("isHeld", [k().lock], ["h", "a", String(token)]), 1);
    assert.equal(await s.run("isHeld", [k().lock], ["h", "b", String(token)]), -1);
    assert.ok((await s.redis.pttl(k().lock)) <= pttl);
    await s.redis.del(k().lock);
    assert.equal(await s.run("isHeld", [k().lock], ["h", "a", String(token)]), 0);
  });

  it("is-held treats a zset member past its deadline as gone", async () => {
    const key = s.keys("k", "sem").shared;
    await s.redis.zadd(key, Date.now() - 1, "late", Date.now() + 60_000, "live");
    assert.equal(await s.run("isHeld", [key], ["z", "late", ""]), 0);
    assert.equal(await s.run("isHeld", [key], ["z", "live", ""]), 1);
  });
});
