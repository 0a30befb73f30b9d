// One W5 process: takes `leases` leases that its library keeps renewing by itself, holds them
// until told, and reports its memory. Run with --expose-gc: both memory readings are taken
// after a full GC, so the difference is what the held leases keep alive.
import { createAdapter } from "../libs/index.mjs";
import { now } from "../lib/clock.mjs";

const CHUNK = 1000;

const send = (message) => new Promise((resolve) => process.send(message, resolve));
const memory = () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
};

let unhandled = 0;
process.on("unhandledRejection", () => { unhandled++; });
process.on("uncaughtException", () => { unhandled++; });

process.once("message", async ({ entry, port, leases, ttlMs, watchLoss = true }) => {
  const adapter = await createAdapter(entry);
  await adapter.setup([port]);
  const before = memory();
  const startedAt = now();
  const releases = [];
  let acquireErrors = 0;
  // In chunks, so that no library is judged on how it copes with 100,000 simultaneous calls.
  for (let i = 0; i < leases; i += CHUNK) {
    const chunk = await Promise.allSettled(
      Array.from({ length: Math.min(CHUNK, leases - i) }, (_, j) => adapter.hold(`bench:w5:${i + j}`, ttlMs, { watchLoss })),
    );
    for (const r of chunk) {
      if (r.status === "fulfilled") releases.push(r.value);
      else acquireErrors++;
    }
  }
  const acquireMs = now() - startedAt;
  process.on("message", async (message) => {
    if (message.type === "memory") {
      await send({ type: "memory", before, held: memory(), lost: adapter.lost });
    } else if (message.type === "release") {
      const lostBeforeRelease = adapter.lost;
      // All at once: a library that retries a failed release (redlock) waits out its retries in parallel.
      const results = await Promise.allSettled(releases.map((release) => release()));
      const releaseErrors = results.filter((r) => r.status === "rejected").length;
      await send({ type: "released", lost: lostBeforeRelease, releaseErrors, unhandled });
      await Promise.race([adapter.teardown(), new Promise((r) => setTimeout(r, 2000))]);
      process.exit(0);
    }
  });
  await send({ type: "held", acquireMs, held: releases.length, acquireErrors });
});
