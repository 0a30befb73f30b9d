// W3 contended across processes: 4 processes x 5 workers on one key; the critical section is a
// read-modify-write of a Redis counter, so a lock that lets two holders in loses updates.
import { now } from "../lib/clock.mjs";
import { forkChild } from "../lib/ipc.mjs";
import { contendedFigures } from "../lib/stats.mjs";

export const title = "W3 contended, 4 processes x 5 workers on one key, read-modify-write counter";
export const PROCESSES = 4;
export const WORKERS = 5;

export async function run({ entries, ports, timing, control, guard, loud }) {
  const rows = [];
  for (const entry of entries) {
    const result = await guard(entry.label, async () => {
      const key = `bench:w3:${entry.id}`;
      const counterKey = `bench:w3:${entry.id}:counter`;
      await control.set(counterKey, 0);
      const children = Array.from({ length: PROCESSES }, () => forkChild("w3-worker.mjs"));
      try {
        children.forEach((c, proc) => c.send({ entry, port: ports.main, proc, workers: WORKERS, key, counterKey }));
        await Promise.all(children.map((c) => c.next("ready", 20_000)));
        const startAt = now() + 100;
        const windowStart = startAt + timing.warmupMs;
        const windowEnd = windowStart + timing.durationMs;
        children.forEach((c) => c.send({ startAt, windowEnd }));
        const done = await Promise.all(children.map((c) => c.next("done", timing.warmupMs + timing.durationMs + 30_000)));
        const sections = [];
        for (const d of done) {
          for (let i = 0; i < d.sections.length; i += 4) {
            sections.push({ w: d.sections[i], waitStart: d.sections[i + 1], acquiredAt: d.sections[i + 2], releaseAt: d.sections[i + 3] });
          }
        }
        sections.sort((a, b) => a.acquiredAt - b.acquiredAt);
        const workers = [];
        for (let p = 0; p < PROCESSES; p++) for (let w = 0; w < WORKERS; w++) workers.push(`p${p}w${w}`);
        const expected = done.reduce((n, d) => n + d.sections.length / 4 - d.criticalErrors, 0);
        const final = Number(await control.get(counterKey));
        const lostUpdates = expected - final;
        const figures = contendedFigures({
          sections, windowStart, windowEnd, workers,
          openWaits: done.flatMap((d) => d.openWaits),
          acquireErrors: done.reduce((n, d) => n + d.acquireErrors, 0),
        });
        if (figures.overlaps > 0) {
          loud(`OVERLAPPING SECTIONS: ${entry.label} let ${figures.overlaps} critical section(s) start before the previous holder released, in W3`);
        }
        if (lostUpdates !== 0) {
          loud(`LOST UPDATES: ${entry.label} lost ${lostUpdates} of ${expected} counter increments in W3 (final counter ${final}): two holders were inside the lock at once`);
        }
        return {
          ...figures,
          expected,
          final,
          lostUpdates,
          releaseErrors: done.reduce((n, d) => n + d.releaseErrors, 0),
          criticalErrors: done.reduce((n, d) => n + d.criticalErrors, 0),
          tailTimedOut: done.some((d) => d.tailTimedOut),
          lastError: done.map((d) => d.lastError).find(Boolean),
        };
      } finally {
        for (const c of children) c.kill();
        await control.flushall();
      }
    });
    rows.push({ id: entry.id, label: entry.label, ...result });
  }
  return { rows };
}
