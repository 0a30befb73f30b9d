import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("renew-batch.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());

  it("renews each of many leases in one call and answers per key: 1 renewed, 0 gone, -1 taken", async () => {
    const a = s.keys("a"); const b = s.keys("b"); const c = s.keys("c"); const z = s.keys("z", "sem");
    const take = async (k: typeof a, owner: string) =>
      ((await s.run("acquire", acquireKeys(k), acquireArgs(owner, 1_000))) as number[])[1]!;
    const ta = await take(a, "me");
    const tb = await take(b, "other");
    await s.redis.zadd(z.shared, Date.now() + 1_000, "member");
    const reply = await s.run("renewBatch", [a.lock, b.lock, c.lock, z.shared],
      ["h", "me", String(ta), 30_000, "h", "me", String(tb), 30_000, "h", "me", "5", 30_000, "z", "member", "", 30_000]);
    assert.deepEqual(reply, [1, -1, 0, 1]);
    assert.ok((await s.redis.pttl(a.lock)) > 20_000, "renewed");
    assert.ok((await s.redis.pttl(b.lock)) <= 1_000, "another owner's lock untouched");
    assert.equal(await s.redis.exists(c.lock), 0, "a lapsed lock is not revived");
    assert.ok(Number(await s.redis.zscore(z.shared, "member")) > Date.now() + 20_000, "member deadline moved");
    assert.ok((await s.redis.pttl(z.shared)) > 20_000, "zset key outlives its members' deadline");
  });

  it("a zset member past its deadline is not revived", async () => {
    const z = s.keys("z", "sem");
    await s.redis.zadd(z.shared, Date.now() - 5, "late");
    await s.redis.pexpire(z.shared, 10_000);
    assert.deepEqual(await s.run("renewBatch", [z.shared], ["z", "late", "", 30_000]), [0]);
  });
});
