/**
 * Issue 12's CI entry: short torture runs on fixed seeds, one per deployment this machine can
 * start (single, Sentinel, Cluster, quorum), then every seed in regressions.json. Each must end
 * without a protocol violation; a failure prints the checker's verdict and the minimal history.
 * On the old protocol this FAILS (that is the proof the checkers have teeth): it is meant to pass
 * once the protocol of docs/protocol.md is in.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { runTorture } from "./orchestrator.js";
import type { DeploymentKind } from "./plan.js";

interface Run {
  readonly seed: number;
  readonly deployment: DeploymentKind;
  readonly minutes: number;
  readonly workers?: number;
  readonly keys?: number;
  readonly nodes?: number;
}

/** About 2.5 minutes in all on a 2-core machine (setup, run, drain, check). */
const FIXED: readonly Run[] = [
  { seed: 101, deployment: "single", minutes: 0.4 },
  { seed: 102, deployment: "sentinel", minutes: 0.35 },
  { seed: 103, deployment: "cluster", minutes: 0.35 },
  { seed: 104, deployment: "quorum", minutes: 0.4 },
];

const regressions = JSON.parse(readFileSync(new URL("./regressions.json", import.meta.url), "utf8")) as readonly (Run & { found: readonly string[] })[];

async function tortured(run: Run): Promise<void> {
  const lines: string[] = [];
  const result = await runTorture({
    seed: run.seed, minutes: run.minutes, deployment: run.deployment, workers: run.workers ?? 4, keys: run.keys ?? 3,
    flows: 3, quorumNodes: run.nodes ?? 3, keepHistory: false, detailed: 4, log: (line) => lines.push(line),
  });
  assert.ok(result.passed, `\n${lines.join("\n")}`);
}

describe("torture: fixed seeds on every deployment", () => {
  for (const run of FIXED) {
    void it(`seed ${run.seed} on ${run.deployment} for ${run.minutes} min: no protocol violation`, () => tortured(run));
  }
});

describe("torture: every seed that ever failed (regressions.json)", () => {
  for (const run of regressions) {
    void it(`seed ${run.seed} on ${run.deployment} for ${run.minutes} min (once found: ${run.found.join(", ")}): no protocol violation`,
      () => tortured(run));
  }
});
