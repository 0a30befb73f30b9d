import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { scriptBench, type ScriptBench } from "./script-harness.js";

describe("acquire-shared.lua and release-shared.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());

  it("never admits more live members than permits; a lapsed member frees its slot", async () => {
    const k = s.keys("sem", "sem");
    const take = (member: string, ttl = 10_000) =>
      s.run("acquireShared", [k.shared, k.fence, k.lock, k.mark], [member, ttl, 86_400_000, 2, member]) as Promise<number[]>;
    assert.equal((await take("a"))[0], 1);
    assert.equal((await take("b", 30))[0], 1);
    const [code, wait] = await take("c");
    assert.equal(code, 0);
    assert.ok(wait! <= 30, "the hint is the earliest member's remaining time");
    await new Promise((r) => setTimeout(r, 40)); // b's lease lapses on the server clock
    assert.equal((await take("c"))[0], 1);
    assert.equal(await s.redis.zcard(k.shared), 2);
    assert.ok((await s.redis.pttl(k.shared)) > 0);
  });

  it("readers stay out while another owner writes or a writer is waiting", async () => {
    const k = s.keys("doc", "rw");
    const read = (owner: string) =>
      s.run("acquireShared", [k.shared, k.fence, k.lock, k.mark], [`${owner}:1`, 10_000, 86_400_000, 0, owner]) as Promise<number[]>;
    await s.redis.hset(k.lock, "o", "writer", "n", 1, "t", 1);
    await s.redis.pexpire(k.lock, 10_000);
    assert.equal((await read("reader"))[0], 0);
    assert.equal((await read("writer"))[0], 1, "the writer itself may read");
    await s.redis.del(k.lock);
    await s.redis.set(k.mark, "writer2", "PX", 10_000);
    assert.equal((await read("reader"))[0], 0, "a waiting writer holds new readers back");
  });

  it("release-shared removes only its member and announces the free slot", async () => {
    const k = s.keys("sem", "sem");
    await s.redis.zadd(k.shared, Date.now() + 10_000, "a", Date.now() + 10_000, "b");
    assert.equal(await s.run("releaseShared", [k.shared, k.channel], ["a", "PUBLISH"]), 1);
    assert.deepEqual(await s.redis.zrange(k.shared, 0, -1), ["b"]);
    assert.equal(await s.run("releaseShared", [k.shared, k.channel], ["a", "PUBLISH"]), 0);
  });
});
