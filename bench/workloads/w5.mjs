// W5 held leases: 10,000 leases (ttl 3 s) held for 3 x ttl in a child process, renewed by the
// library itself. Counted at the server: the commands spent (INFO commandstats, before/after),
// the server's CPU time; and the holding process's memory.
import { Redis } from "ioredis";
import { now, sleep } from "../lib/clock.mjs";
import { forkChild } from "../lib/ipc.mjs";
import { diff, snapshot } from "../lib/redis-info.mjs";
import { percentiles } from "../lib/stats.mjs";

/**
 * A bystander: another client sending PING every 5 ms while the leases are held. A renewal that
 * keeps the server busy for long shows up in its latency.
 */
async function bystander(port, untilAt) {
  const client = new Redis({ port, host: "127.0.0.1" });
  const latencies = [];
  try {
    await client.ping();
    while (now() < untilAt) {
      const t0 = now();
      await client.ping();
      latencies.push(now() - t0);
      await sleep(5);
    }
  } finally {
    client.disconnect();
  }
  return percentiles(latencies);
}

export const title = "W5 held leases: 10,000 leases renewed by the library, ttl 3 s";
export const LEASES = 10_000;
export const TTL_MS = 3_000;

export async function run({ entries, ports, timing, control, guard }) {
  const rows = [];
  const holdMs = timing.holdTtls * TTL_MS;
  for (const entry of entries) {
    if (entry.variant !== "default") continue; // retry settings play no part here
    const row = { id: entry.id, label: entry.label, leases: LEASES, ttlMs: TTL_MS, heldMs: holdMs };
    if (entry.module === "redlock4.mjs") {
      rows.push({ ...row, skipped: "no auto-extension in redlock 4 (the caller must call extend())" });
      continue;
    }
    const result = await guard(entry.label, async () => {
      const child = forkChild("w5-holder.mjs", ["--expose-gc"]);
      try {
        child.send({ entry, port: ports.main, leases: LEASES, ttlMs: TTL_MS });
        const held = await child.next("held", 60_000);
        const before = await snapshot(control);
        const t0 = now();
        const probe = await bystander(ports.main, t0 + holdMs);
        const after = await snapshot(control);
        const seconds = (now() - t0) / 1000;
        const keys = await control.dbsize();
        child.send({ type: "memory" });
        const mem = await child.next("memory", 30_000);
        child.send({ type: "release" });
        const released = await child.next("released", 60_000);
        const d = diff(before, after);
        const all = Object.values(d.calls).reduce((a, b) => a + b, 0);
        const scripts = (d.calls.evalsha ?? 0) + (d.calls.eval ?? 0);
        const scriptUsec = (d.usec.evalsha ?? 0) + (d.usec.eval ?? 0);
        return {
          acquireMs: held.acquireMs,
          held: held.held,
          acquireErrors: held.acquireErrors,
          evalshaPerSec: scripts / seconds,
          commandsPerSec: all / seconds,
          commands: d.calls,
          redisCpuPct: (100 * d.cpuSeconds) / seconds,
          usecPerScriptCall: scripts ? scriptUsec / scripts : NaN,
          keysInRedis: keys,
          probeP50Ms: probe.p50,
          probeP99Ms: probe.p99,
          probeMaxMs: probe.max,
          rssMB: mem.held.rss / 2 ** 20,
          rssDeltaMB: (mem.held.rss - mem.before.rss) / 2 ** 20,
          heapUsedMB: mem.held.heapUsed / 2 ** 20,
          heapDeltaMB: (mem.held.heapUsed - mem.before.heapUsed) / 2 ** 20,
          lost: released.lost,
          releaseErrors: released.releaseErrors,
          measuredSec: seconds,
        };
      } finally {
        child.kill();
        await control.flushall();
      }
    });
    rows.push({ ...row, ...result });
  }
  return { rows };
}
