// W4 quorum: 5 independent primaries, one loop, uncontended; surelock's quorum mode against its
// single-node mode, against the Redlock implementations and against the floor (a bare Redlock:
// SET NX PX on all 5, compare-and-delete on all 5) over the same 5 nodes. Run twice:
// on bare loopback, where the 5 redis-servers and the client share 2 cores and a quorum pays
// in CPU; and over a simulated network (every link delayed in a proxy process), where, as in a
// real deployment, the round trip dominates and a parallel fan-out costs about one of them.
import { forkChild } from "../lib/ipc.mjs";
import { createAdapter } from "../libs/index.mjs";
import { uncontended } from "./uncontended.mjs";

export const title = "W4 quorum: 5 primaries, uncontended, one loop";

/** One-way delay of each simulated link, ms: a 2 ms round trip, as between nearby zones. */
export const LINK_DELAY_MS = 1;

export async function run({ entries, ports, timing, controls, guard }) {
  const plan = [];
  // surelock and the floor also run on one of the 5 nodes: what a quorum costs each of them.
  const surelock = entries.find((e) => e.id === "surelock:default");
  if (surelock) plan.push({ entry: surelock, id: "surelock:single", label: "surelock, single node", nodes: 1 });
  const floor = entries.find((e) => e.id === "floor:default");
  if (floor) plan.push({ entry: floor, id: "floor:single", label: "floor, single node", nodes: 1 });
  // Retry settings do not matter without contention: one variant per library.
  for (const entry of entries) {
    if (entry.variant !== "default") continue;
    const name = { "surelock:default": "surelock", "floor:default": "floor" }[entry.id] ?? entry.label;
    plan.push({ entry, id: `${entry.id.split(":")[0]}:quorum`, label: `${name}, quorum of 5`, nodes: 5 });
  }
  const proxy = forkChild("delay-proxy.mjs");
  try {
    proxy.send({ type: "start", targets: ports.quorum, delayMs: LINK_DELAY_MS });
    const { ports: delayed } = await proxy.next("ports", 10_000);
    const rows = [];
    for (const network of ["loopback", "delayed"]) {
      const nodePorts = network === "loopback" ? ports.quorum : delayed;
      for (const { entry, id, label, nodes } of plan) {
        const result = await guard(`${label} (${network})`, async () => {
          const adapter = await createAdapter(entry);
          await adapter.setup(nodePorts.slice(0, nodes));
          try {
            return await uncontended({
              adapter, keyPrefix: `bench:w4:${network}:${id}`, concurrency: 1, warmupMs: timing.warmupMs, durationMs: timing.durationMs,
            });
          } finally {
            await adapter.teardown();
            await Promise.all(controls.map((c) => c.flushall()));
          }
        });
        rows.push({ id, label, nodes, network, ...result });
      }
    }
    return { rows, linkDelayMs: LINK_DELAY_MS };
  } finally {
    proxy.kill();
  }
}
