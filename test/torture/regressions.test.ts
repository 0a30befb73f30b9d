/**
 * Every seed that ever found a violation (regressions.json), run again: none may find one now.
 * What each seed found is guarded by deterministic tests (its `reproducedBy`, checked by
 * reproduced-by.test.ts) that force that interleaving on the in-memory double or through a fault
 * proxy; this replay is a short random run beside them: REPLAY_MINUTES (6 s) each in CI,
 * TORTURE_FULL=1 gives each the minutes it was found with.
 */
import { describe, it } from "node:test";
import { minutesFor, regressions, REPLAY_MINUTES, tortured } from "./ci-runs.js";

describe("torture: every seed that ever failed (regressions.json)", { timeout: 900_000 }, () => {
  for (const run of regressions) {
    void it(`seed ${run.seed} on ${run.deployment} for ${minutesFor(run, REPLAY_MINUTES)} min (once found: ${run.found.join(", ")}): no protocol violation`,
      () => tortured(run, REPLAY_MINUTES));
  }
});
