/**
 * What the CI entries of the torture suite run, and how. CI shortens every run to `CI_MINUTES`
 * (the regression seeds to `REPLAY_MINUTES`) so the whole suite stays well under its time budget;
 * `TORTURE_FULL=1` runs each seed for the minutes it was found with (what regressions.json
 * records), as `npm run torture` would.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runTorture } from "./orchestrator.js";
import type { DeploymentKind } from "./plan.js";

export interface Run {
  readonly seed: number;
  readonly deployment: DeploymentKind;
  readonly minutes: number;
  readonly workers?: number;
  readonly keys?: number;
  readonly nodes?: number;
}

export interface Regression extends Run {
  readonly found: readonly string[];
  /** The deterministic tests of what it found: "<test file> › <test name>". */
  readonly reproducedBy: readonly string[];
}

/** The fixed seeds' exploration on every deployment. */
export const CI_MINUTES = 0.2;
/**
 * A regression seed's replay: a short random run beside the deterministic tests that force what
 * it found (its `reproducedBy`), which guard those interleavings on every run.
 */
export const REPLAY_MINUTES = 0.1;
const full = process.env.TORTURE_FULL === "1";

/** Minutes this run gets here: its own under TORTURE_FULL=1, at most `capMinutes` otherwise. */
export function minutesFor(run: Run, capMinutes = CI_MINUTES): number {
  return full ? run.minutes : Math.min(run.minutes, capMinutes);
}

export const regressions = JSON.parse(
  readFileSync(new URL("./regressions.json", import.meta.url), "utf8"),
) as readonly Regression[];

/** Runs one seed; fails with the checker's verdict and the minimal history when it finds a violation. */
export async function tortured(run: Run, capMinutes = CI_MINUTES): Promise<void> {
  const lines: string[] = [];
  const result = await runTorture({
    seed: run.seed, minutes: minutesFor(run, capMinutes), deployment: run.deployment, workers: run.workers ?? 4,
    keys: run.keys ?? 3, flows: 3, quorumNodes: run.nodes ?? 3, keepHistory: false, detailed: 4,
    log: (line) => lines.push(line),
  });
  assert.ok(result.passed, `\n${lines.join("\n")}`);
}
