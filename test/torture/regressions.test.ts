/**
 * Every seed that ever found a violation (regressions.json), run again: none may find one now.
 * CI runs each for 12 seconds (0.2 min); TORTURE_FULL=1 gives each the minutes it was found with.
 */
import { describe, it } from "node:test";
import { minutesFor, regressions, tortured } from "./ci-runs.js";

describe("torture: every seed that ever failed (regressions.json)", { timeout: 900_000 }, () => {
  for (const run of regressions) {
    void it(`seed ${run.seed} on ${run.deployment} for ${minutesFor(run)} min (once found: ${run.found.join(", ")}): no protocol violation`,
      () => tortured(run));
  }
});
