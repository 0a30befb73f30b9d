// The test tiers (scripts/test-tiers.mjs): every file has one, and the fast
// tiers (unit and memory, `npm run test:fast`) start no server, proxy or process: the helpers that
// would refuse to when the runner says it runs only those tiers.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { TIER_NAMES, tierOf } from "../scripts/test-tiers.mjs";
import { assertSlowTier } from "./helpers/tier.js";

const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });

describe("test tiers", () => {
  it("every test file has one known tier; a file named in a tier wins over its folder's", () => {
    const files = walk("test").filter((f) => f.endsWith(".test.ts"));
    assert.ok(files.length > 50);
    for (const f of files) assert.ok(TIER_NAMES.includes(tierOf(f)), `${f}: ${tierOf(f)}`);
    assert.equal(tierOf("test/quorum/votes.test.ts"), "unit");
    assert.equal(tierOf("test/quorum/faults.test.ts"), "deployments");
    assert.equal(tierOf("test/torture/checkers.test.ts"), "unit");
    assert.equal(tierOf("test/torture/regressions.test.ts"), "soak");
    assert.equal(tierOf("test/mutex/basics.test.ts"), "redis", "what no tier names runs on a real redis-server");
  });

  it("the weights that order a run (scripts/test-weights.json) are seconds of test files that exist", () => {
    const files = new Set(walk("test").filter((f) => f.endsWith(".test.ts")).map((f) => f.split("\\").join("/")));
    const weights = JSON.parse(readFileSync("scripts/test-weights.json", "utf8")) as Record<string, unknown>;
    assert.ok(Object.keys(weights).length > 0);
    for (const [file, seconds] of Object.entries(weights)) {
      assert.ok(files.has(file), `${file} is no test file: drop it from scripts/test-weights.json`);
      assert.ok(typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0, `${file}: ${String(seconds)}`);
    }
  });

  it("a helper that starts a server refuses in a run of the fast tiers only, and says where to move the test", () => {
    const before = process.env.SURELOCK_TEST_TIERS;
    try {
      process.env.SURELOCK_TEST_TIERS = "unit,memory";
      assert.throws(() => assertSlowTier("a redis-server"), /a redis-server: a test of the unit and memory tier may not start one.*scripts\/test-tiers\.mjs/);
      process.env.SURELOCK_TEST_TIERS = "memory,redis";
      assert.doesNotThrow(() => assertSlowTier("a redis-server"));
      process.env.SURELOCK_TEST_TIERS = "";
      assert.doesNotThrow(() => assertSlowTier("a redis-server"), "a whole run, or a run by path");
    } finally {
      if (before === undefined) delete process.env.SURELOCK_TEST_TIERS;
      else process.env.SURELOCK_TEST_TIERS = before;
    }
  });
});
