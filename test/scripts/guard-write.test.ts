import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { scriptBench, type ScriptBench } from "./script-harness.js";

describe("guard-write.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());
  const write = (token: string, ...command: (string | number)[]) =>
    s.run("guardWrite", ["surelock:guard:{r}:highest-token", "{r}:data"], [token, 60_000, ...command]) as Promise<[number, unknown]>;

  it("writes with a token at least the highest seen, and refuses an older one without writing", async () => {
    assert.equal((await write("10", "SET", "new"))[0], 1);
    assert.equal((await write("10", "SET", "same-holder-again"))[0], 1);
    assert.deepEqual(await write("9", "SET", "stale"), [0, "10"]);
    assert.equal(await s.redis.get("{r}:data"), "same-holder-again");
  });

  it("compares tokens of different lengths as integers, not as text", async () => {
    await write("1795316077069445", "SET", "a");
    assert.equal((await write("999999999999999", "SET", "b"))[0], 0);
    assert.equal((await write("10000000000000000", "SET", "c"))[0], 1);
  });

  it("refuses commands outside its list", async () => {
    await assert.rejects(write("1", "FLUSHALL"), /not allowed/);
  });
});
