/**
 * The Lua interpreter on its own: the snippet corpus (whose answers differential.test.ts checks
 * against a real redis-server), number printing, and its guards. No server needed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createInterpreter, formatFloat, LuaError, number2string, ScriptKilledError, tostring } from "../../src/testing/lua/index.js";
import { MemoryRedisServer } from "../../src/testing/memory-redis.js";
import { scripts } from "../../src/scripts/index.js";
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

  it("runs surelock's acquire script as Redis does: founds a hold, and a replay answers the same", () => {
    const server = new MemoryRedisServer();
    const conn = server.connect();
    const call = scripts.acquire.call({ lock: "p:{k}:lock", queue: "p:{k}:queue", tickets: "p:{k}:tickets" },
      { owner: "owner", hold: "h1", entry: "h1", ttl: 10_000, join: "", ticketLease: 0 });
    const command = (name: string, source: string) => [name, source, String(call.keys.length), ...call.keys, ...call.args.map(String)];
    const first = server.execute(conn, command("EVAL", scripts.acquire.lua));
    const replay = server.execute(conn, command("EVALSHA", scripts.acquire.sha));
    // The same hold and token; the PTTL is what is left of it now.
    assert.deepEqual(Array.isArray(replay) && replay.slice(0, 3), Array.isArray(first) && first.slice(0, 3));
    assert.equal(Array.isArray(first) && first[0], 1);
    assert.equal(Array.isArray(first) && first[2], "h1");
  });
});
