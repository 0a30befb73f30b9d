// W2 contended in one process: 10 workers, one key, empty critical section.
import { createAdapter } from "../libs/index.mjs";
import { now } from "../lib/clock.mjs";
import { runContended } from "../lib/contended.mjs";
import { contendedFigures } from "../lib/stats.mjs";

export const title = "W2 contended, one process: 10 workers on one key, empty critical section";
export const WORKERS = 10;

export async function run({ entries, ports, timing, control, guard, loud }) {
  const rows = [];
  for (const entry of entries) {
    const result = await guard(entry.label, async () => {
      const adapter = await createAdapter(entry);
      await adapter.setup([ports.main]);
      try {
        const workerIds = Array.from({ length: WORKERS }, (_, i) => `w${i}`);
        const startAt = now();
        const windowStart = startAt + timing.warmupMs;
        const windowEnd = windowStart + timing.durationMs;
        const r = await runContended({ adapter, key: `bench:w2:${entry.id}`, workerIds, startAt, windowEnd });
        const figures = contendedFigures({
          sections: r.sections, windowStart, windowEnd, workers: workerIds, openWaits: r.openWaits, acquireErrors: r.acquireErrors,
        });
        if (figures.overlaps > 0) {
          loud(`OVERLAPPING SECTIONS: ${entry.label} let ${figures.overlaps} critical section(s) start before the previous holder released, in W2`);
        }
        return {
          ...figures,
          releaseErrors: r.releaseErrors,
          tailTimedOut: r.tailTimedOut,
          lastError: r.lastError,
        };
      } finally {
        await adapter.teardown();
        await control.flushall();
      }
    });
    rows.push({ id: entry.id, label: entry.label, ...result });
  }
  return { rows };
}
