// One W3 process: `workers` workers on the shared lock, each critical section a read-modify-write
// of a Redis counter (GET, then SET value+1) on its own connection. Driven by the parent over IPC:
// it says "ready" once connected, starts at the agreed instant, and sends back every section.
import { Redis } from "ioredis";
import { createAdapter } from "../libs/index.mjs";
import { runContended } from "../lib/contended.mjs";

const send = (message) => new Promise((resolve) => process.send(message, resolve));

process.on("unhandledRejection", () => {});
process.once("message", async ({ entry, port, proc, workers, key, counterKey }) => {
  const adapter = await createAdapter(entry);
  await adapter.setup([port]);
  const counter = new Redis({ port, host: "127.0.0.1" });
  await counter.ping();
  process.once("message", async ({ startAt, windowEnd }) => {
    const workerIds = Array.from({ length: workers }, (_, i) => `p${proc}w${i}`);
    const result = await runContended({
      adapter,
      key,
      workerIds,
      startAt,
      windowEnd,
      critical: async () => {
        const value = await counter.get(counterKey);
        await counter.set(counterKey, Number(value ?? 0) + 1);
      },
    });
    // Flat arrays: a few thousand sections travel faster than objects.
    const flat = result.sections.flatMap((s) => [s.w, s.waitStart, s.acquiredAt, s.releaseAt]);
    await send({ type: "done", ...result, sections: flat });
    await Promise.race([Promise.all([adapter.teardown(), counter.quit()]), new Promise((r) => setTimeout(r, 2000))]);
    process.exit(0);
  });
  await send({ type: "ready" });
});
