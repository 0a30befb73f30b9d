/** guard-write.lua: stale tokens refused; every write applied exactly once, however often it is sent. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { scriptBench, type ScriptBench } from "./bench.js";

void describe("guard-write.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const write = (token: string, writer: string, seq: number, command: string, data: string, ...args: string[]) =>
    scripts.guardWrite.call({ guard: "t:guard:{stock}", data }, { token, writer, seq, keep: 60_000, window: 10_000, command }, { args });

  void it("a replayed DECRBY is applied once and answers its first reply", async () => {
    await b.redis.set("{stock}:units", "10");
    const r = await b.replay(write("100", "g1", 1, "DECRBY", "{stock}:units", "3"), ["{stock}:units", "t:guard:{stock}"]);
    assert.deepEqual(r.first, { status: "written", reply: 7 });
    assert.deepEqual(r.second, { status: "written", reply: 7 });
    assert.deepEqual(r.again, r.after);
    assert.equal(await b.redis.get("{stock}:units"), "7");
  });

  void it("an older write of the same writer, resent late, is not applied again", async () => {
    await b.run(write("100", "g1", 2, "DECRBY", "{stock}:units", "1"));
    assert.deepEqual(await b.run(write("100", "g1", 1, "DECRBY", "{stock}:units", "3")), { status: "replayed" });
    assert.equal(await b.redis.get("{stock}:units"), "6");
  });

  void it("a lower token is refused; a higher one starts a new era; tokens compare beyond a double's precision", async () => {
    assert.deepEqual(await b.run(write("99", "g2", 1, "SET", "{stock}:units", "0")), { status: "refused", highestToken: 100n });
    assert.deepEqual(await b.run(write("9007199254740993", "g2", 1, "SET", "{stock}:units", "5")), { status: "written", reply: "OK" });
    assert.deepEqual(await b.run(write("9007199254740992", "g3", 1, "SET", "{stock}:units", "0")),
      { status: "refused", highestToken: 9007199254740993n });
    assert.equal(await b.redis.get("{stock}:units"), "5");
  });

  void it("a status reply (SET's OK) replays as the same text", async () => {
    const r = await b.replay(write("9007199254740993", "g4", 1, "SET", "{stock}:units", "8"), ["{stock}:units"]);
    assert.deepEqual(r.first, { status: "written", reply: "OK" });
    assert.deepEqual(r.second, { status: "written", reply: "OK" });
  });

  void it("a write resent after a newer holder wrote answers its first reply, and is not applied again", async () => {
    await b.redis.set("{stock}:resent", "10");
    assert.deepEqual(await b.run(write("9007199254740994", "g6", 1, "DECRBY", "{stock}:resent", "2")), { status: "written", reply: 8 });
    assert.deepEqual(await b.run(write("9007199254740995", "g7", 1, "DECRBY", "{stock}:resent", "1")), { status: "written", reply: 7 });
    // g6's reply was lost; its client resends the same call (same writer, same seq, its old token).
    assert.deepEqual(await b.run(write("9007199254740994", "g6", 1, "DECRBY", "{stock}:resent", "2")), { status: "written", reply: 8 });
    // A new write of g6 with its old token is stale.
    assert.deepEqual(await b.run(write("9007199254740994", "g6", 2, "DECRBY", "{stock}:resent", "2")), { status: "refused", highestToken: 9007199254740995n });
    assert.equal(await b.redis.get("{stock}:resent"), "7");
  });

  void it("a writer's record outlives a newer holder for the replay window only", async () => {
    const short = (token: string, writer: string, seq: number) =>
      scripts.guardWrite.call({ guard: "t:guard:{window}", data: "{window}:v" }, { token, writer, seq, keep: 60_000, window: 20, command: "INCRBY" }, { args: ["1"] });
    await b.run(short("1", "old", 1));
    const recorded = await b.redis.hlen("t:guard:{window}");
    await b.redis.call("DEBUG", "SLEEP", "0.05"); // the server's own clock moves past the window
    await b.run(short("2", "new", 1));
    assert.equal(await b.redis.hexists("t:guard:{window}", "old"), 0, "the old writer's record is pruned when a newer holder writes after the window");
    assert.ok(recorded >= 3, "a record: highest token, writer's seq, its reply");
    assert.deepEqual(await b.run(short("1", "old", 1)), { status: "refused", highestToken: 2n }, "a resend after the window is refused, never applied twice");
    assert.equal(await b.redis.get("{window}:v"), "2");
  });

  void it("refuses commands outside the list", async () => {
    await assert.rejects(b.run(write("9007199254740993", "g5", 1, "FLUSHALL", "{stock}:units")), { code: "ERR_SURELOCK_SCRIPT" });
  });
});
