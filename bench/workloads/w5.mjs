// W5 held leases: 10,000 and 100,000 leases (ttl 3 s) held in a child process while the library
// renews them by itself, for two windows of a few ttl each. In the first, nothing else talks to
// the server: what renewing costs it (commands and CPU, INFO). In the second, a bystander PINGs
// it without pause and a sampler finds the renewal bursts: how long renewals keep the server
// from answering anyone else (the PINGs during the bursts, and the longest script call in
// SLOWLOG). Then what each held lease costs the holding process in memory.
import { now, sleep } from "../lib/clock.mjs";
import { forkChild } from "../lib/ipc.mjs";
import { watch } from "../lib/probes.mjs";
import { diff, recordSlowScripts, snapshot } from "../lib/redis-info.mjs";

export const title = "W5 held leases renewed by the library, ttl 3 s";
export const TTL_MS = 3_000;
/** Script calls shorter than this are not recorded one by one (SLOWLOG threshold). */
export const SLOW_US = 500;
const RELEASE_WAIT_MS = 20_000;
const SCRIPT_COMMANDS = ["evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"];

async function holdAndWatch(entry, leases, holdMs, { ports, control }) {
  const child = forkChild("w5-holder.mjs", ["--expose-gc"]);
  try {
    child.send({ entry, port: ports.main, leases, ttlMs: TTL_MS });
    const held = await child.next("held", 300_000);
    // First a quiet window: what renewing costs the server, with nobody else talking to it.
    const before = await snapshot(control);
    const t0 = now();
    await sleep(holdMs);
    const after = await snapshot(control);
    const seconds = (now() - t0) / 1000;
    // Then the same length with the bystander and the sampler: how long renewals block others.
    const stopRecording = await recordSlowScripts(control, SLOW_US);
    const seen = await watch(ports.main, holdMs);
    const slow = await stopRecording();
    const keys = await control.dbsize();
    child.send({ type: "memory" });
    const mem = await child.next("memory", 60_000);
    child.send({ type: "release" });
    // Bounded: a library that retries the release of leases it lost (redlock, 10 × 200 ms each)
    // can take minutes for 100,000 of them. The keys expire anyway, and the child is killed.
    const released = await child.next("released", RELEASE_WAIT_MS).catch(() => ({ lost: mem.lost, releaseErrors: NaN, timedOut: true }));
    const d = diff(before, after);
    const all = Object.values(d.calls).reduce((a, b) => a + b, 0);
    const scripts = SCRIPT_COMMANDS.reduce((n, c) => n + (d.calls[c] ?? 0), 0);
    const scriptUsec = SCRIPT_COMMANDS.reduce((n, c) => n + (d.usec[c] ?? 0), 0);
    const perLease = (bytes) => (held.held ? bytes / held.held : NaN);
    return {
      acquireMs: held.acquireMs,
      held: held.held,
      acquireErrors: held.acquireErrors,
      scriptCallsPerSec: scripts / seconds,
      commandsPerSec: all / seconds,
      commands: d.calls,
      redisCpuPct: (100 * d.cpuSeconds) / seconds,
      usecPerScriptCall: scripts ? scriptUsec / scripts : NaN,
      slowScriptCalls: slow.count,
      longestScriptCallMs: slow.maxUs / 1000,
      keysInRedis: keys,
      pings: seen.pings,
      pingDuringBurstsP50Ms: seen.during.p50,
      pingDuringBurstsP99Ms: seen.during.p99,
      pingDuringBurstsMaxMs: seen.during.max,
      pingOutsideBurstsP99Ms: seen.outside.p99,
      pingOutsideBurstsMaxMs: seen.outside.max,
      pingMaxMs: seen.all.max,
      bursts: seen.bursts,
      burstsPerSec: seen.burstsPerSec,
      scriptCallsPerBurst: seen.scriptCallsPerBurst,
      burstSpanP50Ms: seen.burstSpanP50Ms,
      burstSpanMaxMs: seen.burstSpanMaxMs,
      rssBefore: mem.before.rss,
      rssHeld: mem.held.rss,
      rssPerLeaseBytes: perLease(mem.held.rss - mem.before.rss),
      heapPerLeaseBytes: perLease(mem.held.heapUsed - mem.before.heapUsed),
      lost: released.lost,
      releaseErrors: released.releaseErrors,
      releaseTimedOut: released.timedOut === true,
      measuredSec: seconds,
    };
  } finally {
    child.kill();
    await control.flushall();
  }
}

export async function run({ entries, ports, timing, control, guard }) {
  const rows = [];
  const holdMs = timing.holdTtls * TTL_MS; // each of the two windows
  for (const leases of timing.sizes) {
    for (const entry of entries) {
      if (entry.variant !== "default" || entry.module === "floor.mjs") continue; // retries play no part; the floor renews nothing
      const row = { id: entry.id, label: entry.label, leases, ttlMs: TTL_MS, heldMs: holdMs };
      if (entry.module === "redlock4.mjs") {
        rows.push({ ...row, skipped: "no auto-extension in redlock 4 (the caller must call extend())" });
        continue;
      }
      const result = await guard(`${entry.label}, ${leases.toLocaleString("en-US")} leases`, () => holdAndWatch(entry, leases, holdMs, { ports, control }), 600_000);
      rows.push({ ...row, ...result });
    }
  }
  return { rows, sizes: timing.sizes, slowUs: SLOW_US };
}
