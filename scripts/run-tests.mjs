// Runs every test file under test/ with Node's test runner (through tsx for TypeScript).
//
//   node scripts/run-tests.mjs [--reporter NAME] [--tier NAME[,NAME]] [path-substring ...]
//
// A path substring runs a subset (`node scripts/run-tests.mjs test/lease`); `--tier` runs the files
// of some tiers (scripts/test-tiers.mjs: unit, memory, redis, deployments, package, soak). The
// generated Lua and SQL modules are made again first. A whole run measures
// coverage of src/ (c8, remapped to the TypeScript sources, child processes included) and fails
// below the floor in .c8rc.json; `--no-coverage` or a subset skips it. The test counts are then
// printed once more under the coverage report, so that the log ends with them. People get a compact
// report (scripts/test-reporter.mjs: one line per suite, failures in full, a closing count);
// `--reporter spec` (every test) or `tap` picks one of Node's instead. Every run also writes
// JUnit XML to .test-results/junit.xml (gitignored) for CI and tools.
//
// Files start longest first (scripts/test-weights.json: seconds per file, from a whole run's
// .test-results/durations.json; `--record-weights` merges this run's into it), so that no long file
// starts late and leaves one lane working alone at the end. A file with no weight counts as the median.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TIER_NAMES, tierOf } from "./test-tiers.mjs";

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".test.ts") ? [path] : [];
  });

const args = process.argv.slice(2);
let reporter = "./scripts/test-reporter.mjs";
let coverage = true;
const filters = [];
let tiers;
let recordWeights = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--reporter") reporter = args[++i] ?? reporter;
  else if (arg.startsWith("--reporter=")) reporter = arg.slice("--reporter=".length);
  else if (arg === "--no-coverage") coverage = false;
  else if (arg === "--record-weights") recordWeights = true;
  else if (arg === "--tier" || arg.startsWith("--tier=")) {
    const value = arg === "--tier" ? args[++i] ?? "" : arg.slice("--tier=".length);
    tiers = value.split(",").filter(Boolean);
    const unknown = tiers.filter((t) => !TIER_NAMES.includes(t));
    if (tiers.length === 0 || unknown.length > 0) {
      console.error(`--tier: ${JSON.stringify(value)} names no tier of ${TIER_NAMES.join(", ")}`);
      process.exit(2);
    }
  }
  else filters.push(arg);
}

const files = walk("test")
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => tiers === undefined || tiers.includes(tierOf(f)))
  .map((f) => f.split("\\").join("/"));
const weightsFile = join("scripts", "test-weights.json");
const weights = JSON.parse(readFileSync(weightsFile, "utf8"));
const known = Object.values(weights).sort((a, b) => a - b);
const weightOf = (f) => weights[f] ?? known[Math.floor(known.length / 2)] ?? 0;
files.sort((a, b) => weightOf(b) - weightOf(a) || (a < b ? -1 : a > b ? 1 : 0));
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
// The generated Lua and SQL modules follow their sources: an edited script never runs stale.
for (const gen of ["scripts/gen-scripts.mjs", "scripts/gen-sql.mjs"]) {
  const made = spawnSync(process.execPath, [gen], { stdio: "inherit" });
  if (made.status !== 0) process.exit(made.status ?? 1);
}
const results = ".test-results";
const summaryFile = join(results, "summary.txt");
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });

// Two files at a time: the machine has two cores, and fault tests are sensitive to starvation.
// A file may run up to 10 minutes: the torture regressions and the model checks take a few.
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const measured = coverage && filters.length === 0 && tiers === undefined;
if (measured) rmSync("coverage", { recursive: true, force: true });
const lanes = Array.from({ length: Number(concurrency) || 1 }, () => 0);
for (const f of files) lanes[lanes.indexOf(Math.min(...lanes))] += weightOf(f);
const unweighed = files.filter((f) => weights[f] === undefined).length;
console.log(`${files.length} files${unweighed > 0 ? ` (${unweighed} with no weight)` : ""}, ` +
  `${Math.round(files.reduce((sum, f) => sum + weightOf(f), 0))} s by their weights, about ${Math.round(Math.max(...lanes))} s on ${lanes.length} lanes`);
const durations = join(results, "durations.json");
const result = spawnSync(
  process.execPath,
  [
    ...(measured ? [join("node_modules", "c8", "bin", "c8.js"), "--check-coverage", process.execPath] : []),
    "--import", "tsx", join("scripts", "test-queue.mjs"), "--concurrency", concurrency, "--timeout", "600000",
    "--durations", durations, "--reporter", `${reporter}=stdout`, "--reporter", `junit=${join(results, "junit.xml")}`,
    "--", ...files,
  ],
  { stdio: "inherit", env: { ...process.env, SURELOCK_TEST_SUMMARY: summaryFile, SURELOCK_TEST_TIERS: (tiers ?? []).join(",") } },
);
// c8 prints its coverage report after the tests: repeat the counts below it, as a log's last lines.
if (measured && existsSync(summaryFile)) {
  process.stdout.write(`\n${readFileSync(summaryFile, "utf8")}`);
  if (result.status !== 0) console.log("(coverage or tests below the bar: see above)");
}
if (recordWeights && existsSync(durations)) {
  const merged = { ...weights, ...JSON.parse(readFileSync(durations, "utf8")) };
  const sorted = Object.fromEntries(Object.keys(merged).sort().map((f) => [f, merged[f]]));
  writeFileSync(weightsFile, `${JSON.stringify(sorted, null, 2)}\n`);
}
process.exit(result.status ?? 1);
