// W1 and W4: `concurrency` loops, each on its own key, acquire + release as fast as they go.
// Acquire latency is the time from lock() to the lock being held (release not included); cycle
// latency runs from lock() to release() resolved; a cycle counts when it completed inside the
// window.
import { now, sleep, within } from "../lib/clock.mjs";
import { percentiles } from "../lib/stats.mjs";

export async function uncontended({ adapter, keyPrefix, concurrency, warmupMs, durationMs }) {
  const latencies = [];
  const releases = [];
  const cycleTimes = [];
  let cycles = 0;
  let allCycles = 0;
  let errors = 0;
  let lastError;
  const windowStart = now() + warmupMs;
  const windowEnd = windowStart + durationMs;
  // This process's CPU time over the window: what a cycle costs the client, besides waiting.
  // Taken by the first loop to notice the window opening and closing.
  let cpuAtStart;
  let cpuAtEnd;
  const loop = async (i) => {
    const key = `${keyPrefix}:${i}`;
    for (;;) {
      const t0 = now();
      if (t0 >= windowStart && !cpuAtStart) cpuAtStart = process.cpuUsage();
      if (t0 >= windowEnd && cpuAtStart && !cpuAtEnd) cpuAtEnd = process.cpuUsage(cpuAtStart);
      if (t0 >= windowEnd || errors > 1000) return;
      let release;
      try {
        release = await adapter.lock(key);
      } catch (error) {
        errors++;
        lastError = error;
        await sleep(1);
        continue;
      }
      const t1 = now();
      try {
        await release();
      } catch (error) {
        errors++;
        lastError = error;
      }
      const t2 = now();
      allCycles++;
      if (t0 >= windowStart) {
        latencies.push(t1 - t0);
        releases.push(t2 - t1);
        cycleTimes.push(t2 - t0);
        if (t2 <= windowEnd) cycles++;
      }
    }
  };
  await within(Promise.all(Array.from({ length: concurrency }, (_, i) => loop(i))), warmupMs + durationMs + 15_000);
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  const p = percentiles(latencies);
  const r = percentiles(releases);
  const c = percentiles(cycleTimes);
  return {
    concurrency,
    opsPerSec: cycles / (durationMs / 1000),
    acquireP50Ms: p.p50,
    acquireP99Ms: p.p99,
    acquireMaxMs: p.max,
    acquireMeanMs: mean(latencies),
    releaseMeanMs: mean(releases),
    clientCpuUsPerCycle: cpuAtEnd && cycles ? (cpuAtEnd.user + cpuAtEnd.system) / cycles : NaN,
    cycleP50Ms: c.p50,
    cycleP99Ms: c.p99,
    releaseP50Ms: r.p50,
    releaseP99Ms: r.p99,
    samples: p.n,
    allCycles,
    errors,
    lastError: lastError ? String(lastError.message ?? lastError).split("\n")[0] : undefined,
  };
}
