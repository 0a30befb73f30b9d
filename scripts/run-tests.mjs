// Runs every test file under test/ with Node's test runner (through tsx for TypeScript).
// Usage: node scripts/run-tests.mjs [path-substring ...] to run a subset.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".test.ts") ? [path] : [];
  });

const filters = process.argv.slice(2);
const files = walk("test").filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))).sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
// Two files at a time: the machine has two cores, and fault tests are sensitive to starvation.
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, "--test-timeout=180000", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
