// W4 quorum: 5 independent primaries, one loop, uncontended; surelock's quorum mode against its
// single-node mode and against the Redlock implementations over the same 5 nodes.
import { createAdapter } from "../libs/index.mjs";
import { uncontended } from "./uncontended.mjs";

export const title = "W4 quorum: 5 primaries, uncontended, one loop";

export async function run({ entries, ports, timing, controls, guard }) {
  const plan = [];
  const surelock = entries.find((e) => e.id === "surelock:default");
  if (surelock) plan.push({ entry: surelock, id: "surelock:single", label: "surelock, single node", nodes: 1 });
  // Retry settings do not matter without contention: one variant per library.
  for (const entry of entries) {
    if (entry.variant !== "default") continue;
    const label = entry.id === "surelock:default" ? "surelock, quorum of 5" : `${entry.label}, quorum of 5`;
    plan.push({ entry, id: `${entry.id.split(":")[0]}:quorum`, label, nodes: 5 });
  }
  const rows = [];
  for (const { entry, id, label, nodes } of plan) {
    const nodePorts = nodes === 1 ? [ports.quorum[0]] : ports.quorum;
    const result = await guard(label, async () => {
      const adapter = await createAdapter(entry);
      await adapter.setup(nodePorts);
      try {
        return await uncontended({
          adapter, keyPrefix: `bench:w4:${id}`, concurrency: 1, warmupMs: timing.warmupMs, durationMs: timing.durationMs,
        });
      } finally {
        await adapter.teardown();
        await Promise.all(controls.map((c) => c.flushall()));
      }
    });
    rows.push({ id, label, nodes, ...result });
  }
  return { rows };
}
