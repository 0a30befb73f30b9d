import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("raise-fence.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());

  it("raises a lower counter and the holder's token, never lowers a counter", async () => {
    const k = s.keys("k");
    const [, mine] = (await s.run("acquire", acquireKeys(k), acquireArgs("a", 10_000))) as number[];
    const chosen = String(mine! + 100);
    assert.equal(await s.run("raiseFence", [k.lock, k.fence], ["a", String(mine), chosen, 60_000]), 1);
    assert.equal(await s.redis.get(k.fence), chosen);
    assert.equal(await s.redis.hget(k.lock, "t"), chosen);
    assert.equal(await s.run("raiseFence", [k.lock, k.fence], ["a", chosen, "5", 60_000]), 0);
    assert.equal(await s.redis.get(k.fence), chosen, "never lowered");
  });

  it("does not touch a lock held by another owner", async () => {
    const k = s.keys("k");
    await s.run("acquire", acquireKeys(k), acquireArgs("b", 10_000));
    const before = await s.redis.hgetall(k.lock);
    assert.equal(await s.run("raiseFence", [k.lock, k.fence], ["a", "1", "99999999999999999", 60_000]), 0);
    assert.deepEqual(await s.redis.hgetall(k.lock), before);
  });
});
