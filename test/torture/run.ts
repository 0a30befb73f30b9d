/**
 * `npm run torture -- --seed N --minutes M [--deployment single|sentinel|cluster|quorum]
 *  [--workers W] [--keys K] [--flows F] [--nodes N] [--keep-history] [--details D]`
 * Exit code 0 when every checker passed, 1 when one found a protocol violation, 2 on bad usage.
 */
import { parseArgs } from "node:util";
import { runTorture } from "./orchestrator.js";
import type { DeploymentKind } from "./plan.js";

const KINDS: readonly DeploymentKind[] = ["single", "sentinel", "cluster", "quorum"];

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run torture -- --seed N --minutes M [--deployment ${KINDS.join("|")}] ` +
    "[--workers W] [--keys K] [--flows F] [--nodes 3|5] [--keep-history] [--details D]\n");
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
    details: { type: "string" },
  },
  strict: true,
});

const minutes = values.minutes === undefined ? 1 : Number(values.minutes);
if (!(minutes > 0 && minutes <= 24 * 60)) usage(`--minutes must be a positive number, got ${JSON.stringify(values.minutes)}`);
const deployment = (values.deployment ?? "single") as DeploymentKind;
if (!KINDS.includes(deployment)) usage(`--deployment must be one of ${KINDS.join(", ")}`);

const result = await runTorture({
  seed: int("seed", values.seed, Math.floor(Math.random() * 1_000_000), 0, 2 ** 31 - 1),
  minutes,
  deployment,
  workers: int("workers", values.workers, 4, 1, 16),
  keys: int("keys", values.keys, 3, 1, 16),
  flows: int("flows", values.flows, 3, 1, 16),
  quorumNodes: int("nodes", values.nodes, 3, 3, 7),
  keepHistory: values["keep-history"] === true,
  detailed: int("details", values.details, 4, 0, 100),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.exitCode = result.passed ? 0 : 1;
