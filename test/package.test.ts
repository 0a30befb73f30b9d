import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

/** What a user gets from `npm install surelock`: the entry points package.json exports. */
describe("the built package", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { exports: Record<string, unknown>; bin: Record<string, string> };
  const run = (code: string, type: "module" | "commonjs"): string =>
    execFileSync(process.execPath, [type === "module" ? "--input-type=module" : "--input-type=commonjs", "-e", code], { encoding: "utf8" });

  it("import and require both resolve `surelock` and expose the same API", () => {
    const names = "Object.keys(m).sort().join(',')";
    const esm = run(`const m = await import('surelock'); console.log(${names})`, "module");
    const cjs = run(`const m = require('surelock'); console.log(${names})`, "commonjs");
    assert.equal(esm, cjs);
    for (const name of ["Surelock", "Mutex", "Lease", "LockLostError", "SurelockError", "channels", "FencingGuard"]) {
      assert.ok(esm.split(",").map((s) => s.trim()).includes(name), `${name} is exported`);
    }
  });

  it("surelock/testing resolves for import and require alike, with types, and runs the library on MemoryRedis", () => {
    const names = "Object.keys(m).sort().join(',')";
    const esm = run(`const m = await import('surelock/testing'); console.log(${names})`, "module");
    assert.equal(esm, run(`const m = require('surelock/testing'); console.log(${names})`, "commonjs"));
    for (const name of ["MemoryRedis", "VirtualClock", "Gate"]) assert.ok(esm.trim().split(",").includes(name), `${name} is exported`);
    const testing = pkg.exports["./testing"] as { import: { types: string }; require: { types: string } };
    for (const file of [testing.import.types, testing.require.types]) assert.match(readFileSync(file, "utf8"), /MemoryRedis/);
    const token = run(
      "const { Surelock } = require('surelock'); const { MemoryRedis } = require('surelock/testing');" +
        "const locks = new Surelock({ redis: new MemoryRedis() });" +
        "locks.mutex('k').acquire().then(async (l) => { console.log(l.fencingToken > 0n); await locks.close(); });",
      "commonjs",
    );
    assert.equal(token.trim(), "true");
  });

  it("ships type declarations for both entry points", () => {
    const root = pkg.exports["."] as { import: { types: string }; require: { types: string } };
    for (const file of [root.import.types, root.require.types]) {
      assert.match(readFileSync(file, "utf8"), /Surelock/);
    }
  });

  it("the surelock command starts and prints its usage", () => {
    const out = execFileSync(process.execPath, [pkg.bin.surelock!, "--help"], { encoding: "utf8" });
    assert.match(out, /exec/);
    assert.match(out, /doctor/);
  });
});
