/**
 * The public API is committed as etc/surelock.api.md, etc/surelock-testing.api.md and
 * etc/surelock-adapter-kit.api.md (API Extractor
 * reports of the built declarations). A change to what users compile against must show up in review
 * as a change to those files: `npm run api` regenerates them.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : []);

describe("API report", () => {
  it("the built declarations of surelock, surelock/testing, surelock/adapter-kit and surelock/otel match the committed etc/*.api.md", () => {
    // Four API Extractor runs: 40 s each on a busy 2-core machine.
    const run = spawnSync(process.execPath, ["scripts/api-report.mjs", "--check"], { encoding: "utf8", timeout: 300_000 });
    // The script prints a unified diff of every report that differs, and what to do about it.
    assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
    assert.match(run.stdout, /etc\/surelock\.api\.md: unchanged/);
    assert.match(run.stdout, /etc\/surelock-testing\.api\.md: unchanged/);
    assert.match(run.stdout, /etc\/surelock-adapter-kit\.api\.md: unchanged/);
    assert.match(run.stdout, /etc\/surelock-otel\.api\.md: unchanged/);
  });

  it("the CommonJS declarations are the ESM ones, so one report covers both", () => {
    const esm = files("dist/types").map((f) => relative("dist/types", f)).sort();
    const cjs = files("dist/cjs").map((f) => relative("dist/cjs", f)).sort();
    assert.deepEqual(cjs, esm);
    for (const file of esm) {
      assert.equal(readFileSync(join("dist/cjs", file), "utf8"), readFileSync(join("dist/types", file), "utf8"), file);
    }
  });
});
