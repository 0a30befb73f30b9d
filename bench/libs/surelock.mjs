// surelock, default settings (only the ttl is set, to the 10 s every library gets here).
// Imported from the built package: run `npm run build` first (`npm run bench` does).
import { Surelock } from "../../dist/index.js";
import { TTL_MS, connect, disconnect } from "./common.mjs";

export const variants = [{ variant: "default", label: "surelock" }];

export function create() {
  let clients = [];
  let locks;
  const adapter = {
    name: "surelock",
    lost: 0,
    async setup(ports) {
      clients = await connect(ports);
      locks = new Surelock({ redis: clients.length === 1 ? clients[0] : clients, ttl: TTL_MS });
    },
    async lock(key, ttlMs) {
      const lease = await locks.mutex(key, ttlMs ? { ttl: ttlMs } : undefined).acquire();
      return () => lease.release();
    },
    // The watchdog renews every held lease (one batched call per tick for all of them). With
    // watchLoss false (a --costs memory row), the lease's signal is never read, so never made.
    async hold(key, ttlMs, { watchLoss = true } = {}) {
      const lease = await locks.mutex(key, { ttl: ttlMs }).acquire();
      if (watchLoss) lease.signal.addEventListener("abort", () => { adapter.lost++; }, { once: true });
      return () => lease.release();
    },
    async teardown() {
      await locks?.close();
      await disconnect(clients);
    },
  };
  return adapter;
}
