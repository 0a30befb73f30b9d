// WQ quorum contended: 10 workers in one process on one key, over a quorum of 5 redis-servers and
// then of 3, with W2's read-modify-write section (the counter lives on the bench's own server).
// Every library that takes several nodes runs it: surelock's quorum mode, the Redlock
// implementations, redis-semaphore's RedlockMutex, and the floor's bare Redlock (SET NX PX on
// every node, no safety). Besides W2's figures, each row says what a section cost the nodes: the
// commands and the script calls each node ran per section (INFO commandstats, which counts the
// commands run inside scripts too), the busiest node's figure.
import { Redis } from "ioredis";
import { createAdapter } from "../libs/index.mjs";
import { now } from "../lib/clock.mjs";
import { runContended } from "../lib/contended.mjs";
import { diff, snapshot } from "../lib/redis-info.mjs";
import { contendedFigures } from "../lib/stats.mjs";

export const title = "WQ quorum contended: 10 workers on one key over 5 and over 3 primaries, read-modify-write counter";
export const WORKERS = 10;
export const NODE_COUNTS = [5, 3];

const SCRIPT_COMMANDS = new Set(["evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"]);

export async function run({ entries, ports, timing, control, controls, guard, loud }) {
  const rows = [];
  for (const nodes of NODE_COUNTS) {
    for (const entry of entries) {
      const result = await guard(`${entry.label} (quorum of ${nodes})`, async () => {
        const adapter = await createAdapter(entry);
        await adapter.setup(ports.quorum.slice(0, nodes));
        const counter = new Redis({ port: ports.main, host: "127.0.0.1" });
        const counterKey = `bench:wq:${nodes}:${entry.id}:counter`;
        const on = controls.slice(0, nodes);
        try {
          await counter.set(counterKey, 0);
          const workerIds = Array.from({ length: WORKERS }, (_, i) => `w${i}`);
          const startAt = now();
          const windowStart = startAt + timing.warmupMs;
          const windowEnd = windowStart + timing.durationMs;
          let before;
          const snapAt = setTimeout(() => { before = Promise.all(on.map((c) => snapshot(c))); }, Math.max(0, windowStart - now()));
          const r = await runContended({
            adapter,
            key: `bench:wq:${nodes}:${entry.id}`,
            workerIds,
            startAt,
            windowEnd,
            critical: async () => {
              const value = await counter.get(counterKey);
              await counter.set(counterKey, Number(value ?? 0) + 1);
            },
            onWindowEnd: async () => Promise.all(on.map((c) => snapshot(c))),
          });
          clearTimeout(snapAt);
          const figures = contendedFigures({
            sections: r.sections, windowStart, windowEnd, workers: workerIds, openWaits: r.openWaits, acquireErrors: r.acquireErrors,
          });
          const inWindow = r.sections.filter((s) => s.acquiredAt >= windowStart && s.acquiredAt <= windowEnd).length;
          const starts = before ? await before : undefined;
          const ends = r.windowEndValue;
          let commandsPerSection;
          let scriptCallsPerSection;
          if (starts && ends && inWindow > 0) {
            const perNode = starts.map((s, i) => diff(s, ends[i]));
            const total = (d, pick) => Object.entries(d.calls).filter(([name]) => pick(name)).reduce((a, [, n]) => a + n, 0);
            commandsPerSection = Math.max(...perNode.map((d) => total(d, () => true))) / inWindow;
            scriptCallsPerSection = Math.max(...perNode.map((d) => total(d, (name) => SCRIPT_COMMANDS.has(name)))) / inWindow;
          }
          const expected = r.sections.length - r.criticalErrors;
          const final = Number(await counter.get(counterKey));
          const lostUpdates = expected - final;
          if (figures.overlaps > 0) {
            loud(`OVERLAPPING SECTIONS: ${entry.label} let ${figures.overlaps} critical section(s) start before the previous holder released, in WQ (quorum of ${nodes})`);
          }
          if (lostUpdates !== 0) {
            loud(`LOST UPDATES: ${entry.label} lost ${lostUpdates} of ${expected} counter increments in WQ (quorum of ${nodes}, final counter ${final})`);
          }
          return {
            ...figures, expected, final, lostUpdates, commandsPerSection, scriptCallsPerSection,
            releaseErrors: r.releaseErrors, criticalErrors: r.criticalErrors, tailTimedOut: r.tailTimedOut, lastError: r.lastError,
          };
        } finally {
          await Promise.all([adapter.teardown(), counter.quit().catch(() => counter.disconnect())]);
          await Promise.all([control, ...controls].map((c) => c.flushall()));
        }
      });
      rows.push({ id: entry.id, label: entry.label, nodes, ...result });
    }
  }
  return { rows };
}
