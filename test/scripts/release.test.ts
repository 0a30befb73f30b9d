import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { Redis } from "ioredis";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("release.lua", () => {
  let s: ScriptBench;
  let sub: Redis;
  before(async () => { s = await scriptBench(); sub = new Redis({ port: s.server.port }); });
  after(async () => { sub.disconnect(); await s.close(); });
  beforeEach(() => s.redis.flushall());
  const k = () => s.keys("k");
  const take = async (owner: string) => ((await s.run("acquire", acquireKeys(k()), acquireArgs(owner, 10_000))) as [number, number])[1];
  const release = (owner: string, token: number | string) => s.run("release", [k().lock, k().channel, k().queue], [owner, String(token), "PUBLISH"]);

  it("the last entry deletes the lock and announces it on the channel", async () => {
    const token = await take("a");
    await sub.subscribe(k().channel);
    const message = new Promise<string>((resolve) => sub.once("message", (_c: string, m: string) => resolve(m)));
    assert.deepEqual(await release("a", token), [1, 0]);
    assert.equal(await s.redis.exists(k().lock), 0);
    assert.equal(await message, "*");
    await sub.unsubscribe();
  });

  it("an inner entry only counts down", async () => {
    const token = await take("a");
    await take("a");
    assert.deepEqual(await release("a", token), [2, 1]);
    assert.equal(await s.redis.hget(k().lock, "n"), "1");
  });

  it("a stale holder (same owner, older token) cannot free its successor's lock", async () => {
    const old = await take("a");
    await s.redis.del(k().lock); // its lease expired
    const fresh = await take("a");
    const before = await s.redis.hgetall(k().lock);
    const [code] = (await release("a", old)) as [number, number];
    assert.equal(code, -1);
    assert.deepEqual(await s.redis.hgetall(k().lock), before);
    assert.notEqual(fresh, old);
  });

  it("another owner's release is refused and leaves lock, count and TTL untouched", async () => {
    const token = await take("a");
    const pttl = await s.redis.pttl(k().lock);
    assert.equal(((await release("b", token)) as number[])[0], -1);
    assert.deepEqual(await s.redis.hgetall(k().lock), { o: "a", n: "1", t: String(token) });
    assert.ok((await s.redis.pttl(k().lock)) <= pttl);
  });

  it("releasing a lock that is gone answers {0, 0}", async () => {
    assert.deepEqual(await release("a", 1), [0, 0]);
  });
});
