import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("acquire.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());
  const args = (owner: string, ttl = 10_000, markMs = 0) => acquireArgs(owner, ttl, { markMs });
  const keys = () => acquireKeys(s.keys("k"));

  it("takes a free lock: owner, one entry, a token, and a PTTL set in the same step", async () => {
    const [code, token] = (await s.run("acquire", keys(), args("a"))) as [number, number];
    assert.equal(code, 1);
    const k = s.keys("k");
    assert.deepEqual(await s.redis.hgetall(k.lock), { o: "a", n: "1", t: String(token) });
    const pttl = await s.redis.pttl(k.lock);
    assert.ok(pttl > 9_000 && pttl <= 10_000, `pttl ${pttl}`);
    assert.ok((await s.redis.pttl(k.fence)) > 0, "the fencing counter expires too");
  });

  it("re-entry by the same owner counts up and keeps the token", async () => {
    const [, token] = (await s.run("acquire", keys(), args("a"))) as [number, number];
    const again = (await s.run("acquire", keys(), args("a"))) as [number, number];
    assert.deepEqual(again, [2, token]);
    assert.equal(await s.redis.hget(s.keys("k").lock, "n"), "2");
  });

  it("a re-entry with a shorter ttl does not shorten the lease", async () => {
    await s.run("acquire", keys(), args("a", 10_000));
    await s.run("acquire", keys(), args("a", 100));
    assert.ok((await s.redis.pttl(s.keys("k").lock)) > 5_000);
  });

  it("another owner gets {0, pttl} and changes nothing", async () => {
    await s.run("acquire", keys(), args("a"));
    const before = await s.redis.hgetall(s.keys("k").lock);
    const [code, pttl] = (await s.run("acquire", keys(), args("b"))) as [number, number];
    assert.equal(code, 0);
    assert.ok(pttl > 0 && pttl <= 10_000);
    assert.deepEqual(await s.redis.hgetall(s.keys("k").lock), before);
  });

  it("tokens strictly increase across first entries, also after the counter expired", async () => {
    const k = s.keys("k");
    const tokens: number[] = [];
    for (let i = 0; i < 5; i++) {
      tokens.push(((await s.run("acquire", keys(), args(`o${i}`))) as [number, number])[1]);
      await s.redis.del(k.lock);
    }
    await s.redis.del(k.fence); // as if its retention ran out
    tokens.push(((await s.run("acquire", keys(), args("late"))) as [number, number])[1]);
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens[i]} > ${tokens[i - 1]}`);
  });

  it("as a write lock, live readers keep it out and mark a waiting writer", async () => {
    const k = s.keys("k", "rw");
    const now = Date.now();
    await s.redis.zadd(k.shared, now + 60_000, "reader");
    const [code] = (await s.run("acquire", acquireKeys(k), args("w", 10_000, 2_000))) as [number, number];
    assert.equal(code, 0);
    assert.equal(await s.redis.get(k.mark), "w");
    assert.ok((await s.redis.pttl(k.mark)) > 0);
    assert.equal(await s.redis.exists(k.lock), 0);
  });
});
