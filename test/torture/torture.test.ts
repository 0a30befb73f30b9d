/**
 * Issue 12's CI entry: short torture runs on fixed seeds, one per deployment this machine can
 * start (single, Sentinel, Cluster, quorum). Each must end without a protocol violation; a
 * failure prints the checker's verdict and the minimal history. Run against the protocol before
 * docs/protocol.md (commit 8d962a5) these seeds found overlaps; see regressions.json.
 */
import { describe, it } from "node:test";
import { minutesFor, tortured, type Run } from "./ci-runs.js";

const FIXED: readonly Run[] = [
  { seed: 101, deployment: "single", minutes: 0.4 },
  { seed: 102, deployment: "sentinel", minutes: 0.35 },
  { seed: 103, deployment: "cluster", minutes: 0.35 },
  { seed: 104, deployment: "quorum", minutes: 0.4 },
];

describe("torture: fixed seeds on every deployment", { timeout: 900_000 }, () => {
  for (const run of FIXED) {
    void it(`seed ${run.seed} on ${run.deployment} for ${minutesFor(run)} min: no protocol violation`, () => tortured(run));
  }
});
