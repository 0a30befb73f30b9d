// One WM process: one Surelock holds a multiLock over `keys` (or a mutex of the first key), and
// another Surelock of the same process starts `waiters` acquires of the same set (or mutex), which
// wait while its watchdog keeps their tickets alive. Told "drain", the holder releases and each
// waiter, once it holds the set, releases it at once: the line drains one holder after another.
// Told "leave" instead, every waiter gives up (its acquire is aborted).
import { setMaxListeners } from "node:events";
import { Surelock } from "../../dist/index.js";
import { connect, disconnect } from "../libs/common.mjs";
import { now } from "../lib/clock.mjs";

const send = (message) => new Promise((resolve) => process.send(message, resolve));

let unhandled = 0;
process.on("unhandledRejection", () => { unhandled++; });

process.once("message", async ({ port, kind, keys, waiters, ttlMs }) => {
  const clients = await connect([port, port]);
  const holderLocks = new Surelock({ redis: clients[0], ttl: ttlMs });
  const waiterLocks = new Surelock({ redis: clients[1], ttl: ttlMs });
  const lockOf = (locks) => (kind === "multi" ? locks.multiLock(keys) : locks.mutex(keys[0]));
  const held = await lockOf(holderLocks).acquire();
  const stop = new AbortController();
  // Every waiter listens to this one signal.
  setMaxListeners(0, stop.signal);
  let served = 0;
  let failed = 0;
  let lastServedAt = 0;
  let drainStartedAt = 0;
  const all = Array.from({ length: waiters }, async () => {
    try {
      const lease = await lockOf(waiterLocks).acquire({ timeout: 600_000, signal: stop.signal });
      await lease.release();
      served++;
      lastServedAt = now();
    } catch {
      failed++;
    }
  });
  process.on("message", async (message) => {
    if (message.type === "drain") {
      drainStartedAt = now();
      await held.release();
      // The parent bounds the drain; "leave" ends whatever is still waiting.
      await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, message.limitMs))]);
      await send({ type: "drained", served, failed, ms: (served === waiters ? lastServedAt : now()) - drainStartedAt });
    } else if (message.type === "leave") {
      const at = now();
      stop.abort();
      await Promise.all(all);
      await send({ type: "left", served, failed, ms: now() - at, unhandled });
      if (held.held) await held.release().catch(() => {});
      await Promise.race([Promise.all([holderLocks.close(), waiterLocks.close()]), new Promise((r) => setTimeout(r, 2000))]);
      await disconnect(clients);
      process.exit(0);
    }
  });
  await send({ type: "started", holderToken: String(held.fencingToken) });
});
