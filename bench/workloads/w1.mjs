// W1 uncontended: 1 and 50 loops, each on its own key, one Redis; plus the floor (SET NX PX + DEL).
// The machine is shared, so a burst of outside load can hit whichever library is running: W1
// runs every library in two rounds, in opposite orders, and reports each one's better round
// (both are in the JSON).
import { createAdapter } from "../libs/index.mjs";
import { diff, snapshot } from "../lib/redis-info.mjs";
import { uncontended } from "./uncontended.mjs";

export const title = "W1 uncontended: acquire + release, each loop on its own key";

async function once(entry, concurrency, round, { ports, timing, control }) {
  const adapter = await createAdapter(entry);
  await adapter.setup([ports.main]);
  try {
    // The server's side of a cycle: its CPU time and the commands it ran (scripts' included),
    // over the whole run (warm-up too) divided by all the cycles.
    const before = await snapshot(control);
    const result = await uncontended({
      adapter,
      keyPrefix: `bench:w1:${entry.id}:${concurrency}:${round}`,
      concurrency,
      warmupMs: timing.warmupMs,
      durationMs: timing.durationMs,
    });
    const d = diff(before, await snapshot(control));
    const commands = Object.values(d.calls).reduce((a, b) => a + b, 0);
    return {
      ...result,
      redisCpuUsPerCycle: (d.cpuSeconds * 1e6) / result.allCycles,
      redisCommandsPerCycle: commands / result.allCycles,
    };
  } finally {
    await adapter.teardown();
    await control.flushall();
  }
}

export async function run({ entries, ports, timing, control, guard }) {
  const rounds = timing.rounds ?? 1;
  const runs = new Map(entries.map((e) => [e.id, { c1: [], c50: [] }]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? entries : [...entries].reverse();
    for (const entry of order) {
      for (const concurrency of [1, 50]) {
        const what = `${entry.label}, ${concurrency} loop(s)${rounds > 1 ? `, round ${round + 1}` : ""}`;
        runs.get(entry.id)[`c${concurrency}`].push(await guard(what, () => once(entry, concurrency, round, { ports, timing, control })));
      }
    }
  }
  const best = (list) => {
    const good = list.filter((r) => !r.error);
    if (good.length === 0) return list[0];
    const top = good.reduce((a, b) => (b.opsPerSec > a.opsPerSec ? b : a));
    return { ...top, rounds: list.map((r) => (r.error ? { error: r.error } : { opsPerSec: r.opsPerSec, acquireP50Ms: r.acquireP50Ms, acquireP99Ms: r.acquireP99Ms })) };
  };
  return {
    rows: entries.map((entry) => ({ id: entry.id, label: entry.label, c1: best(runs.get(entry.id).c1), c50: best(runs.get(entry.id).c50) })),
  };
}
