/**
 * `npm run torture -- --seed N --minutes M [--deployment single|sentinel|cluster|quorum]
 *  [--workers W] [--keys K] [--flows F] [--nodes N] [--keep-history] [--details D] [--repeat R]`
 * Exit code 0 when every checker passed, 1 when one found a protocol violation, 2 on bad usage.
 * `--repeat R` runs the same seed R times (same operations and faults, different timing) and
 * ends with how often each finding came back: the seed's hit rate.
 */
import { parseArgs } from "node:util";
import { runTorture, type RunResult } from "./orchestrator.js";
import type { DeploymentKind } from "./plan.js";

const KINDS: readonly DeploymentKind[] = ["single", "sentinel", "cluster", "quorum"];

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run torture -- --seed N --minutes M [--deployment ${KINDS.join("|")}] ` +
    "[--workers W] [--keys K] [--flows F] [--nodes 3|5] [--keep-history] [--details D] [--repeat R]\n");
  process.exit(2);
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) usage(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

const { values } = parseArgs({
  options: {
    seed: { type: "string" }, minutes: { type: "string" }, deployment: { type: "string" }, workers: { type: "string" },
    keys: { type: "string" }, flows: { type: "string" }, nodes: { type: "string" }, "keep-history": { type: "boolean" },
    details: { type: "string" }, repeat: { type: "string" },
  },
  strict: true,
});

const minutes = values.minutes === undefined ? 1 : Number(values.minutes);
if (!(minutes > 0 && minutes <= 24 * 60)) usage(`--minutes must be a positive number, got ${JSON.stringify(values.minutes)}`);
const deployment = (values.deployment ?? "single") as DeploymentKind;
if (!KINDS.includes(deployment)) usage(`--deployment must be one of ${KINDS.join(", ")}`);

const options = {
  seed: int("seed", values.seed, Math.floor(Math.random() * 1_000_000), 0, 2 ** 31 - 1),
  minutes,
  deployment,
  workers: int("workers", values.workers, 4, 1, 16),
  keys: int("keys", values.keys, 3, 1, 16),
  flows: int("flows", values.flows, 3, 1, 16),
  quorumNodes: int("nodes", values.nodes, 3, 3, 7),
  keepHistory: values["keep-history"] === true,
  detailed: int("details", values.details, 4, 0, 100),
  log: (line: string) => process.stdout.write(`${line}\n`),
};
const repeat = int("repeat", values.repeat, 1, 1, 100);
const results: RunResult[] = [];
for (let i = 1; i <= repeat; i++) {
  if (repeat > 1) options.log(`\n=== run ${i} of ${repeat} ===`);
  results.push(await runTorture(options));
}
if (repeat > 1) {
  // What each run found, by the known failure it looks like and by checker.
  const found = results.map((r) => new Set(r.violations.filter((v) => v.severity === "violation")
    .flatMap((v) => [`checker ${v.checker}`, ...(v.patterns ?? []).map((p) => `looks like ${p}`)])));
  const names = [...new Set(found.flatMap((f) => [...f]))].sort();
  const seconds = results.map((r) => r.seconds.total);
  options.log(`\nhit rates over ${repeat} runs of seed ${options.seed} (${deployment}, ${minutes} min):`);
  options.log(`  any protocol violation: ${results.filter((r) => !r.passed).length}/${repeat}`);
  for (const name of names) options.log(`  ${name}: ${found.filter((f) => f.has(name)).length}/${repeat}`);
  options.log(`  time per run: ${Math.min(...seconds).toFixed(1)}–${Math.max(...seconds).toFixed(1)} s`);
}
process.exitCode = results.every((r) => r.passed) ? 0 : 1;
