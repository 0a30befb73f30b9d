/**
 * The Lua interpreter on its own: the snippet corpus (whose answers differential.test.ts checks
 * against a real redis-server), number printing, and its guards. No server needed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createInterpreter, formatFloat, LuaError, number2string, ScriptKilledError, tostring } from "../../src/testing/lua/index.js";
import { MemoryRedisServer } from "../../src/testing/memory-redis.js";
import { LUA } from "../../src/scripts/index.js";
import { LUA_CORPUS } from "./lua-corpus.js";
import { bytes, wireOf } from "./support/resp-client.js";

describe("Lua interpreter", () => {
  it("answers every corpus snippet as Redis 7.0 does", () => {
    const server = new MemoryRedisServer({ version: "7.0.15" });
    const conn = server.connect();
    for (const [source, expected] of LUA_CORPUS) {
      assert.deepStrictEqual(wireOf(server.execute(conn, ["EVAL", bytes(source), "0"])), expected, source);
    }
  });

  it("prints numbers as C's printf does, ties to even on the exact binary value", () => {
    assert.equal(number2string(123456789012345), "1.2345678901234e+14");
    assert.equal(number2string(2 ** 53), "9.007199254741e+15");
    assert.equal(number2string(1e-5), "1e-05");
    assert.equal(number2string(-0), "-0");
    assert.equal(formatFloat(2.5, "f", 0), "2");
    assert.equal(formatFloat(3.5, "f", 0), "4");
    assert.equal(formatFloat(0.15, "f", 1), "0.1");
    assert.equal(formatFloat(999.9999, "f", 2), "1000.00");
    assert.equal(formatFloat(0.1, "g", 17), "0.10000000000000001");
  });

  it("raises Lua errors with the chunk name and line, and keeps the raising line for Redis", () => {
    const lua = createInterpreter({ chunkName: "user_script" });
    const fn = lua.load("local a = 1\nlocal t = nil\nreturn t.x");
    assert.throws(() => lua.run(fn), (e: unknown) =>
      e instanceof LuaError && e.value === "user_script:3: attempt to index local 't' (a nil value)" && e.line === 3);
    assert.throws(() => lua.load("return +"), (e: unknown) => e instanceof LuaError && String(e.value).includes("unexpected symbol near '+'"));
  });

  it("stops an endless loop after its step budget, and pcall cannot catch that", () => {
    const lua = createInterpreter({ chunkName: "user_script", stepLimit: 10_000 });
    assert.throws(() => lua.run(lua.load("pcall(function() while true do end end)")), ScriptKilledError);
    assert.equal(tostring(lua.run(lua.load("local n = 0 for i = 1, 100 do n = n + i end return n"))[0]), "5050");
  });

  it("runs surelock's acquire script in well under a millisecond", () => {
    const server = new MemoryRedisServer();
    const conn = server.connect();
    const keys = ["p:{k}:lock", "p:{k}:fence", "p:{k}:shared", "p:{k}:mark", "p:{k}:queue", "p:{k}:deadlines"];
    const args = ["owner", "10000", "86400000", "0", "", "3000", "0"];
    server.execute(conn, ["SCRIPT", "LOAD", LUA.acquire.lua]);
    for (let i = 0; i < 200; i++) server.execute(conn, ["EVALSHA", LUA.acquire.sha, "6", ...keys, ...args]);
    const runs = 2_000;
    const started = performance.now();
    for (let i = 0; i < runs; i++) server.execute(conn, ["EVALSHA", LUA.acquire.sha, "6", ...keys, ...args]);
    const perCallMs = (performance.now() - started) / runs;
    assert.ok(perCallMs < 0.5, `acquire.lua took ${perCallMs.toFixed(3)} ms per call`);
  });
});
