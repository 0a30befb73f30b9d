// W2 contended in one process: 10 workers on one key; the critical section is a read-modify-write
// of a Redis counter (GET, then SET n+1, on a connection of its own), as in W3, so a lock that
// lets two holders in loses updates and every library's section costs the same two round trips.
import { Redis } from "ioredis";
import { createAdapter } from "../libs/index.mjs";
import { now } from "../lib/clock.mjs";
import { runContended } from "../lib/contended.mjs";
import { contendedFigures } from "../lib/stats.mjs";

export const title = "W2 contended, one process: 10 workers on one key, read-modify-write counter";
export const WORKERS = 10;

export async function run({ entries, ports, timing, control, guard, loud }) {
  const rows = [];
  for (const entry of entries) {
    const result = await guard(entry.label, async () => {
      const adapter = await createAdapter(entry);
      await adapter.setup([ports.main]);
      const counter = new Redis({ port: ports.main, host: "127.0.0.1" });
      const counterKey = `bench:w2:${entry.id}:counter`;
      try {
        await counter.set(counterKey, 0);
        const workerIds = Array.from({ length: WORKERS }, (_, i) => `w${i}`);
        const startAt = now();
        const windowStart = startAt + timing.warmupMs;
        const windowEnd = windowStart + timing.durationMs;
        const r = await runContended({
          adapter,
          key: `bench:w2:${entry.id}`,
          workerIds,
          startAt,
          windowEnd,
          critical: async () => {
            const value = await counter.get(counterKey);
            await counter.set(counterKey, Number(value ?? 0) + 1);
          },
        });
        const figures = contendedFigures({
          sections: r.sections, windowStart, windowEnd, workers: workerIds, openWaits: r.openWaits, acquireErrors: r.acquireErrors,
        });
        const expected = r.sections.length - r.criticalErrors;
        const final = Number(await counter.get(counterKey));
        const lostUpdates = expected - final;
        if (figures.overlaps > 0) {
          loud(`OVERLAPPING SECTIONS: ${entry.label} let ${figures.overlaps} critical section(s) start before the previous holder released, in W2`);
        }
        if (lostUpdates !== 0) {
          loud(`LOST UPDATES: ${entry.label} lost ${lostUpdates} of ${expected} counter increments in W2 (final counter ${final}): two holders were inside the lock at once`);
        }
        return {
          ...figures,
          expected,
          final,
          lostUpdates,
          releaseErrors: r.releaseErrors,
          criticalErrors: r.criticalErrors,
          tailTimedOut: r.tailTimedOut,
          lastError: r.lastError,
        };
      } finally {
        await Promise.all([adapter.teardown(), counter.quit().catch(() => counter.disconnect())]);
        await control.flushall();
      }
    });
    rows.push({ id: entry.id, label: entry.label, ...result });
  }
  return { rows };
}
