// W6 distinct keys: acquire and release N distinct keys once each (50 loops, no contention), then
// ask the server what the released keys left behind: used_memory before/after, and every key
// that remains with its PTTL and MEMORY USAGE (SCAN). A key kept for t seconds costs its bytes
// for t seconds: the memory-time product over the day after the release, divided by one day,
// is "bytes averaged over a day" (a key without a TTL counts the whole day).
import { createAdapter } from "../libs/index.mjs";
import { now } from "../lib/clock.mjs";
import { usedMemory } from "../lib/redis-info.mjs";

export const title = "W6 distinct keys: Redis memory kept per released key";
export const DAY_S = 86_400;
const LOOPS = 50;
const BATCH = 1000;

/** Every key of the (flushed) database with its PTTL (ms; -1 none) and MEMORY USAGE (bytes). */
async function survey(control) {
  const keys = [];
  let cursor = "0";
  do {
    const [next, found] = await control.scan(cursor, "COUNT", BATCH);
    cursor = next;
    keys.push(...found);
  } while (cursor !== "0");
  const out = [];
  for (let i = 0; i < keys.length; i += BATCH) {
    const pipeline = control.pipeline();
    for (const key of keys.slice(i, i + BATCH)) pipeline.pttl(key).memory("USAGE", key, "SAMPLES", "0");
    const replies = await pipeline.exec();
    for (let j = 0; j < replies.length; j += 2) {
      const pttl = Number(replies[j][1]);
      // -2: expired between SCAN and PTTL, nothing left.
      if (pttl !== -2) out.push({ key: keys[i + j / 2], pttl, bytes: Number(replies[j + 1][1] ?? 0) });
    }
  }
  return out;
}

async function cycleAll(adapter, prefix, count) {
  let next = 0;
  let errors = 0;
  let lastError;
  const loop = async () => {
    while (next < count) {
      const key = `${prefix}:${next++}`;
      try {
        await (await adapter.lock(key))();
      } catch (error) {
        errors++;
        lastError = error;
      }
    }
  };
  await Promise.all(Array.from({ length: LOOPS }, loop));
  return { errors, lastError: lastError ? String(lastError.message ?? lastError).split("\n")[0] : undefined };
}

async function once(entry, count, { ports, control }) {
  await control.flushall();
  const adapter = await createAdapter(entry);
  await adapter.setup([ports.main]);
  try {
    // One cycle first, so that loaded scripts and connection buffers are in the baseline.
    await (await adapter.lock(`bench:w6:${entry.id}:warm-up`))();
    const keysBefore = await control.dbsize();
    const memoryBefore = await usedMemory(control);
    const t0 = now();
    const { errors, lastError } = await cycleAll(adapter, `bench:w6:${entry.id}`, count);
    const seconds = (now() - t0) / 1000;
    const memoryAfter = await usedMemory(control);
    // The warm-up key's leftovers were in the baseline.
    const left = (await survey(control)).filter((k) => !k.key.includes(":warm-up"));
    const surveyed = left.reduce((a, k) => a + k.bytes, 0);
    // Seconds each key will still live within the day (a key without a TTL: the whole day).
    const within = (k) => (k.pttl < 0 ? DAY_S : Math.min(DAY_S, k.pttl / 1000));
    const byteSeconds = left.reduce((a, k) => a + k.bytes * within(k), 0);
    const keptPerKey = (memoryAfter - memoryBefore) / count;
    // The server's own figure (used_memory: dictionaries and expiry entries included) weighted by
    // how long the bytes MEMORY USAGE sees will stay.
    const dayShare = surveyed > 0 ? byteSeconds / (surveyed * DAY_S) : 0;
    const lives = left.filter((k) => k.pttl >= 0).map((k) => k.pttl / 1000);
    return {
      released: count,
      cyclesPerSec: count / seconds,
      errors,
      lastError,
      keysBefore,
      keysLeft: left.length,
      keysWithoutTtl: left.filter((k) => k.pttl === -1).length,
      // Of the keys with a TTL (keysWithoutTtl counts the others).
      longestPttlS: lives.length ? lives.reduce((a, b) => Math.max(a, b)) : null,
      shortestPttlS: lives.length ? lives.reduce((a, b) => Math.min(a, b)) : null,
      usedMemoryDeltaBytes: memoryAfter - memoryBefore,
      keptBytesPerKey: keptPerKey,
      memoryUsageBytesPerKey: surveyed / count,
      dayShare,
      dayAverageBytesPerKey: Math.max(0, keptPerKey) * dayShare,
      dayAverageMemoryUsageBytesPerKey: byteSeconds / DAY_S / count,
      sampleKey: left[0]?.key,
    };
  } finally {
    await adapter.teardown();
    await control.flushall();
  }
}

export async function run({ entries, ports, timing, control, guard }) {
  const rows = [];
  for (const entry of entries) {
    if (entry.variant !== "default") continue; // retry settings play no part without contention
    const result = await guard(`${entry.label}, ${timing.keys.toLocaleString("en-US")} keys`, () => once(entry, timing.keys, { ports, control }), 300_000);
    rows.push({ id: entry.id, label: entry.label, ...result });
  }
  return { rows, keys: timing.keys, daySeconds: DAY_S };
}
