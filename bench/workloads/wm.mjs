// WM waiting lines: one holder holds a multiLock over 3 keys while 1,000 multiLock waiters of the
// same set wait behind it (all in a child process, the waiters on one Surelock: one watchdog
// refreshes every ticket), for a few ttl windows; then the same with a mutex of one key and 1,000
// mutex waiters. Surelock only: no peer has a multi-key lock or a line of waiters.
//
// While they wait: SLOWLOG (every script call over 100 µs, the script told by its SHA) gives the
// longest keep-alive call and how many items it carried; a bystander PINGs without pause and a
// sampler finds the keep-alive bursts (probes.mjs, as in W5). Then the holder releases and the
// line drains, each waiter releasing as soon as it holds: the longest call of each script
// (acquire-multi, release-multi, ...) while a line of 1,000 moves, and how long the drain took.
// Last, whatever still waits gives up (leave-multi, leave-queue).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { now, sleep } from "../lib/clock.mjs";
import { forkChild } from "../lib/ipc.mjs";
import { watch } from "../lib/probes.mjs";
import { diff, recordSlowlog, snapshot } from "../lib/redis-info.mjs";
import { percentiles } from "../lib/stats.mjs";

export const title = "WM 1,000 waiters on one multiLock (3 keys) or one mutex, ttl 3 s";
export const TTL_MS = 3_000;
export const KEYS = ["bench:wm:a", "bench:wm:b", "bench:wm:c"];
/** Script calls shorter than this are not recorded one by one (SLOWLOG threshold). */
export const SLOW_US = 100;
const DRAIN_LIMIT_MS = 60_000;

/** Script names by SHA, from the generated scripts (bench/costs.mjs reads the same file). */
function scriptNames() {
  const generated = readFileSync(fileURLToPath(new URL("../../src/scripts/lua.generated.ts", import.meta.url)), "utf8");
  return new Map([...generated.matchAll(/\n {4}name: "([^"]+)",\n {4}sha: "(\w+)",/g)].map((m) => [m[2], m[1]]));
}

/** SLOWLOG from here on (threshold `us`); the returned function stops and resolves with per-script figures. */
async function recordScripts(control, us, names) {
  const stop = await recordSlowlog(control, us);
  return async () => {
    const entries = await stop();
    const byScript = {};
    for (const e of entries) {
      const args = (e[3] ?? []).map(String);
      if (!/^evalsha$/i.test(args[0] ?? "")) continue;
      const name = names.get(args[1]) ?? args[1];
      // SLOWLOG keeps 32 arguments of a call, but the third is the number of KEYS: the call's size.
      const s = (byScript[name] ??= { count: 0, maxUs: 0, totalUs: 0, keysAtMax: NaN, durationsUs: [] });
      const us = Number(e[2]);
      s.count++;
      s.durationsUs.push(us);
      s.totalUs += us;
      if (us > s.maxUs) {
        s.maxUs = us;
        s.keysAtMax = Number(args[2]);
      }
    }
    for (const s of Object.values(byScript)) {
      const p = percentiles(s.durationsUs);
      s.p50Us = p.p50;
      s.p99Us = p.p99;
      delete s.durationsUs;
    }
    return byScript;
  };
}

/** LLEN of the first key's line (the bench's own knowledge of the layout: `<prefix>:{key}:queue`). */
const lineLength = (control) => control.llen(`surelock:{${KEYS[0]}}:queue`);

async function line(kind, waiters, holdMs, { ports, control, names }) {
  const child = forkChild("wm-waiters.mjs");
  try {
    child.send({ port: ports.main, kind, keys: KEYS, waiters, ttlMs: TTL_MS });
    await child.next("started", 60_000);
    const queuedFrom = now();
    const recordQueueing = await recordScripts(control, SLOW_US, names);
    while ((await lineLength(control)) < waiters) {
      if (now() - queuedFrom > 60_000) throw new Error(`only ${await lineLength(control)} of ${waiters} waiters in line after 60 s`);
      await sleep(20);
    }
    const queueMs = now() - queuedFrom;
    // One ticket refresh period at least, so that the arrivals' own refreshes are over.
    await sleep(1_500);
    const queueing = await recordQueueing();
    // A quiet window first, nobody else talking to the server: Redis's CPU time per keepalive
    // call (CPU time, unlike SLOWLOG's and commandstats' wall time, does not count the moments a
    // loaded machine took the CPU away from redis-server in the middle of a call).
    const quietBefore = await snapshot(control);
    await sleep(holdMs);
    const quiet = diff(quietBefore, await snapshot(control));
    // The watched window: keep-alive only (the holder is renewed too).
    const before = await snapshot(control);
    const stopRecording = await recordScripts(control, SLOW_US, names);
    const t0 = now();
    const seen = await watch(ports.main, holdMs);
    const seconds = (now() - t0) / 1000;
    const waiting = await stopRecording();
    const after = await snapshot(control);
    const inLine = await lineLength(control);
    const d = diff(before, after);
    // Then the line drains: the holder releases, each waiter takes the set and releases it.
    const recordDrain = await recordScripts(control, SLOW_US, names);
    const drainBefore = await snapshot(control);
    child.send({ type: "drain", limitMs: DRAIN_LIMIT_MS });
    const drained = await child.next("drained", DRAIN_LIMIT_MS + 30_000);
    const drainAfter = await snapshot(control);
    const draining = await recordDrain();
    const recordLeave = await recordScripts(control, SLOW_US, names);
    child.send({ type: "leave" });
    const left = await child.next("left", 60_000);
    const leaving = await recordLeave();
    const dd = diff(drainBefore, drainAfter);
    const ka = waiting.keepalive ?? { count: 0, maxUs: 0, totalUs: 0, keysAtMax: NaN };
    return {
      waiters,
      inLine,
      queueMs,
      longestKeepaliveMs: ka.maxUs / 1000,
      keepaliveP50Ms: ka.p50Us / 1000,
      keepaliveP99Ms: ka.p99Us / 1000,
      keepaliveKeysAtLongest: ka.keysAtMax,
      slowKeepaliveCalls: ka.count,
      quietCpuUsPerCall: quiet.calls.evalsha ? (1e6 * quiet.cpuSeconds) / quiet.calls.evalsha : NaN,
      quietUsecPerCall: quiet.calls.evalsha ? quiet.usec.evalsha / quiet.calls.evalsha : NaN,
      quietCommandsPerCall: quiet.calls.evalsha ? (Object.values(quiet.calls).reduce((a, b) => a + b, 0) - quiet.calls.evalsha) / quiet.calls.evalsha : NaN,
      scriptCallsPerSec: (d.calls.evalsha ?? 0) / seconds,
      usecPerScriptCall: d.calls.evalsha ? d.usec.evalsha / d.calls.evalsha : NaN,
      redisCpuPct: (100 * d.cpuSeconds) / seconds,
      bursts: seen.bursts,
      scriptCallsPerBurst: seen.scriptCallsPerBurst,
      burstSpanP50Ms: seen.burstSpanP50Ms,
      pings: seen.pings,
      pingP50Ms: seen.all.p50,
      pingP99Ms: seen.all.p99,
      pingMaxMs: seen.all.max,
      pingDuringBurstsP99Ms: seen.during.p99,
      pingDuringBurstsMaxMs: seen.during.max,
      queueing,
      waiting,
      drained: drained.served,
      drainFailed: drained.failed,
      drainMs: drained.ms,
      drainScriptCalls: dd.calls.evalsha ?? 0,
      drainPublishes: (dd.calls.publish ?? 0) + (dd.calls.spublish ?? 0),
      drainCommands: Object.entries(dd.calls).reduce((n, [name, c]) => n + (name === "evalsha" ? 0 : c), 0),
      drainCpuSeconds: dd.cpuSeconds,
      draining,
      leftAfterDrain: waiters - drained.served,
      leaving,
      unhandled: left.unhandled,
      measuredSec: seconds,
    };
  } finally {
    child.kill();
    await control.flushall();
  }
}

export async function run({ entries, ports, timing, control, guard }) {
  const rows = [];
  if (!entries.some((e) => e.id === "surelock:default")) return { rows, note: "surelock not selected" };
  const names = scriptNames();
  const holdMs = timing.holdTtls * TTL_MS;
  for (const waiters of timing.sizes) {
    for (const kind of ["multi", "mutex"]) {
      const label = kind === "multi" ? `multiLock of ${KEYS.length} keys` : "mutex";
      const result = await guard(`${label}, ${waiters.toLocaleString("en-US")} waiters`, () => line(kind, waiters, holdMs, { ports, control, names }), 300_000);
      rows.push({ id: `surelock:${kind}`, label, kind, ttlMs: TTL_MS, heldMs: holdMs, ...result });
    }
  }
  return { rows, sizes: timing.sizes, slowUs: SLOW_US };
}
