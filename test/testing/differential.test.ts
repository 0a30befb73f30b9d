/**
 * MemoryRedis against a real redis-server: the same commands, the same scripts (every file in
 * src/scripts, with random and realistic arguments), seeded random command sequences and Lua
 * programs; replies and keyspace must agree (see support/differential.ts for how time is made
 * comparable). A disagreement is a MemoryRedis bug.
 */
import { readdirSync, readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Differential } from "./support/differential.js";
import { KEYS, Random, randomCommand, randomLua } from "./support/generators.js";
import { bytes } from "./support/resp-client.js";
import { LUA_CORPUS } from "./lua-corpus.js";

const SEED = Number(process.env.MEMORY_REDIS_SEED ?? 20261123);
const scriptDir = new URL("../../src/scripts/", import.meta.url);
const scripts = readdirSync(scriptDir).filter((f) => f.endsWith(".lua")).sort()
  .map((file) => ({ file, lua: readFileSync(new URL(file, scriptDir), "latin1") }));

describe("MemoryRedis agrees with redis-server", () => {
  let d: Differential;
  before(async () => {
    d = await Differential.start();
    await d.listen("ch");
  });
  after(async () => {
    await d.stop();
  });
  after(() => {
    console.log(`# differential: ${d.steps} steps compared; widest t0..t1 window ${(d.widestStepUs / 1000).toFixed(2)} ms`);
  });

  it("on the Lua snippet corpus (and the corpus's expected replies are the real ones)", async () => {
    for (const [source, expected] of LUA_CORPUS) {
      const { real } = await d.step(["EVAL", bytes(source), "0"], "corpus");
      assert.deepStrictEqual(real, expected, `corpus expectation for ${JSON.stringify(source)}`);
    }
  });

  it(`on seeded random command sequences (seed ${SEED})`, async () => {
    await d.reset();
    const r = new Random(SEED);
    for (let i = 0; i < 1500; i++) {
      if (i % 300 === 0) await d.step(["FLUSHALL"]);
      await d.step(randomCommand(r), `command #${i} (seed ${SEED})`);
    }
    await d.step(["EXEC"]);
    await d.step(["DISCARD"]);
  });

  it(`on seeded random Lua programs (seed ${SEED})`, async () => {
    await d.reset();
    const r = new Random(SEED + 1);
    for (let i = 0; i < 400; i++) {
      const source = randomLua(r);
      const keys = r.some(KEYS, 2, 2);
      const args = r.some(["1", "abc", "", "3.5"], 0, 2);
      await d.step(["EVAL", bytes(source), "2", ...keys, ...args], `program #${i} (seed ${SEED})`);
    }
  });

  it("on every script in src/scripts, by EVALSHA (NOSCRIPT first), EVAL and with random arguments", async () => {
    assert.ok(scripts.length > 0, "no scripts found in src/scripts");
    await d.reset();
    await d.step(["SCRIPT", "FLUSH"]);
    const r = new Random(SEED + 2);
    const lockKeys = ["surelock:{k}:lock", "surelock:{k}:fence", "surelock:{k}:shared", "surelock:{k}:mark", "surelock:{k}:queue",
      "surelock:{k}:deadlines", "surelock:{k}:released", "surelock:{k}:holders", "surelock:{k}:state", "surelock:{k}:tickets"];
    const argPool = ["owner-a", "owner-b", "10000", "86400000", "0", "1", "", "t1", "t2", "3000", "h", "z", "PUBLISH", "2",
      "-1", "SET", "INCRBY", "5", "1795442865974650", "w", "r", "s", "abc", "1.5", "99999999999999999999"];
    for (const { file, lua } of scripts) {
      const sha = (await d.step(["SCRIPT", "LOAD", lua], file)).real as string;
      await d.step(["SCRIPT", "EXISTS", sha, "0000"], file);
      for (let i = 0; i < 60; i++) {
        const keys = r.some(lockKeys, 0, 7);
        const args = r.some(argPool, 0, 9);
        const how = r.chance(0.5) ? ["EVALSHA", sha] : ["EVAL", lua];
        await d.step([...how, String(keys.length), ...keys, ...args], `${file} call #${i}`);
      }
      await d.step(["SCRIPT", "FLUSH"]);
      await d.step(["EVALSHA", sha, "0"], file);
    }
  });
});
