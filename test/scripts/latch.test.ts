/** count-down.lua and read-latch.lua: a countdown latch, each count down counted once. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KeySpace } from "../../src/keys.js";
import { scripts } from "../../src/protocol/index.js";
import { within } from "../helpers/fixtures.js";
import { assertAllExpire, scriptBench, type ScriptBench } from "./bench.js";

void describe("count-down.lua, read-latch.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const space = new KeySpace("t");
  const down = (name: string, id: string, count = 3, ttl = 60_000) => {
    const k = space.latch(name);
    return scripts.countDown.call({ latch: k.state, channel: k.channel }, { id, count, ttl, publish: "PUBLISH" });
  };
  const read = (name: string, count = 3) => b.run(scripts.readLatch.call({ latch: space.latch(name).state }, { count }));

  void it("the first count down makes the latch with its count minus one, with a PTTL of the ttl; a replay counts once", async () => {
    const k = space.latch("first");
    const r = await b.replay(down("first", "a"), [k.state]);
    assert.deepEqual(r.first, { status: "counted", left: 2, ids: [] });
    assert.deepEqual(r.second, { status: "unchanged", left: 2, ids: [] });
    assert.deepEqual(r.again, r.after);
    assert.deepEqual(r.after[k.state]?.value, { c: "2", "d:a": "1", n: "3" });
    assertAllExpire(r.again);
    const pttl = await b.redis.pttl(k.state);
    assert.ok(pttl > 59_000 && pttl <= 60_000, `PTTL ${pttl}`);
  });

  void it("reaching 0 announces it once, keeps only the count, and a replay of the last one or a later one counts nothing", async () => {
    const k = space.latch("open");
    const sub = b.redis.duplicate();
    const heard: string[] = [];
    const opened = new Promise<void>((resolve) => sub.on("message", (_: string, m: string) => { heard.push(m); resolve(); }));
    await sub.subscribe(k.channel);
    try {
      await b.run(down("open", "a"));
      await b.run(down("open", "b"));
      assert.deepEqual(await b.run(down("open", "c")), { status: "counted", left: 0, ids: [] });
      await within(2_000, opened, "the announcement");
      assert.deepEqual(await b.redis.hgetall(k.state), { n: "3", c: "0" });
      assert.deepEqual(await b.run(down("open", "c")), { status: "unchanged", left: 0, ids: [] });
      assert.deepEqual(await b.run(down("open", "d", 3, 90_000)), { status: "unchanged", left: 0, ids: [] });
      assert.ok((await b.redis.pttl(k.state)) > 60_000, "a count down of an open latch still renews its TTL");
      // A PING on the subscriber answers after every message published before it: nothing else was announced.
      await sub.ping();
      assert.deepEqual(heard, ["0"]);
    } finally {
      sub.disconnect();
    }
  });

  void it("a latch made with another count is left alone: conflict, with its count", async () => {
    const k = space.latch("conflict");
    await b.run(down("conflict", "a", 3));
    const before = await b.snapshot([k.state]);
    assert.deepEqual(await b.run(down("conflict", "b", 5)), { status: "conflict", count: 3 });
    assert.deepEqual(await read("conflict", 5), { status: "conflict", count: 3 });
    assert.deepEqual(await b.snapshot([k.state]), before);
  });

  void it("read-latch: the whole count for a latch Redis does not have, else what is left; changes nothing", async () => {
    assert.deepEqual(await read("unread", 4), { status: "unchanged", left: 4, ids: [] });
    assert.equal(await b.redis.exists(space.latch("unread").state), 0);
    await b.run(down("partly", "a"));
    const before = await b.snapshot([space.latch("partly").state]);
    assert.deepEqual(await read("partly"), { status: "unchanged", left: 2, ids: [] });
    assert.deepEqual(await b.snapshot([space.latch("partly").state]), before);
  });
  void it("with ids asked for (quorum mode), both list the ids this node counted while it is not at 0", async () => {
    const k = space.latch("ids");
    const downWithIds = (id: string) => b.run(scripts.countDown.call({ latch: k.state, channel: k.channel }, { id, count: 3, ttl: 60_000, publish: "PUBLISH" }, { args: ["1"] }));
    assert.deepEqual(await downWithIds("a"), { status: "counted", left: 2, ids: ["a"] });
    const second = await downWithIds("b");
    assert.ok(second.status === "counted");
    assert.deepEqual([...second.ids].sort(), ["a", "b"]);
    const read = await b.run(scripts.readLatch.call({ latch: k.state }, { count: 3 }, { args: ["1"] }));
    assert.ok(read.status === "unchanged");
    assert.deepEqual([...read.ids].sort(), ["a", "b"]);
    assert.deepEqual(await downWithIds("c"), { status: "counted", left: 0, ids: [] });
    assert.deepEqual(await b.run(scripts.readLatch.call({ latch: k.state }, { count: 3 }, { args: ["1"] })), { status: "unchanged", left: 0, ids: [] });
  });
});
