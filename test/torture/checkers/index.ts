/** Every checker over one history (plus what the orchestrator read from Redis at the end). */
import type { HistoryEvent } from "../history.js";
import { checkAnswers } from "./answers.js";
import { checkExclusion, checkPermits } from "./exclusion.js";
import { checkCalls, checkSweep, checkWorkers, type Sweep } from "./liveness.js";
import { buildModel, type Model } from "./model.js";
import { checkProgress } from "./progress.js";
import { checkCounters, checkFencedRegisters, type CounterFinals, type GuardLogs } from "./resources.js";
import type { Violation } from "./violation.js";

export interface EndState {
  readonly logs: GuardLogs;
  readonly counters: CounterFinals;
  readonly sweep: Sweep;
}

/** `end` undefined: only the checkers that need nothing but the history (recheck of an old run). */
export function checkHistory(history: readonly HistoryEvent[], end: EndState | undefined): { model: Model; violations: Violation[] } {
  const model = buildModel(history);
  const violations = [
    ...checkExclusion(model),
    ...checkPermits(model),
    ...(end ? checkFencedRegisters(model, end.logs) : []),
    ...checkCounters(model, end?.counters ?? new Map()),
    ...checkAnswers(model),
    ...checkCalls(model),
    ...checkProgress(model),
    ...(end ? checkSweep(end.sweep) : []),
    ...checkWorkers(model),
  ];
  return { model, violations };
}

export type { Violation } from "./violation.js";
export type { Sweep } from "./liveness.js";
