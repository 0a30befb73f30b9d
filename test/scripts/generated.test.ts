/**
 * The generated scripts (scripts/gen-scripts.mjs): every Lua helper a script defines is one it
 * calls. Redis creates each `local function` on every call, so an include's unused helpers would
 * cost every call; and a helper the cut dropped but the script still calls would fail at run time.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LUA } from "../../src/scripts/lua.generated.js";

/** The script's code without its comments. */
const code = (lua: string): string => lua.split("\n").map((l) => l.replace(/--.*$/, "")).join("\n");

void describe("generated scripts", () => {
  void it("define only the helpers they call, and call no helper they lack", () => {
    const unused: string[] = [];
    for (const [name, source] of Object.entries(LUA)) {
      const text = code(source.lua);
      for (const [, helper] of text.matchAll(/^local function (\w+)\(/gm)) {
        // Called somewhere besides its own definition.
        const uses = text.match(new RegExp(`\\b${helper}\\b`, "g"))?.length ?? 0;
        if (uses < 2) unused.push(`${name}: ${helper}`);
      }
    }
    assert.deepEqual(unused, []);
    // What the cut keeps and drops, on two scripts whose includes bring more than they use.
    const helpers = (lua: string): string[] => [...code(lua).matchAll(/^local function (\w+)\(/gm)].map((m) => m[1] ?? "");
    assert.ok(!helpers(LUA.release.lua).includes("stand"), "a release never queues: no stand()");
    assert.ok(helpers(LUA.release.lua).includes("handOver"));
    assert.ok(helpers(LUA.guardWrite.lua).includes("below"), "a one-line helper is kept when called");
  });
});
