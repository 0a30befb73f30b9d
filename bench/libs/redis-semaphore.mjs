// redis-semaphore's Mutex (RedlockMutex over several nodes). Defaults: acquireTimeout 10 s,
// retryInterval 10 ms (it polls SET NX), refreshInterval 0.8 x lockTimeout on a timer per lock.
// "fast": retryInterval 1 ms. lockTimeout (its ttl) 10 s as everywhere here.
import { Mutex, RedlockMutex } from "redis-semaphore";
import { TTL_MS, connect, disconnect } from "./common.mjs";

export const variants = [
  { variant: "default", label: "redis-semaphore" },
  { variant: "fast", label: "redis-semaphore (fast)" },
];

const SETTINGS = {
  default: {},
  fast: { retryInterval: 1 },
};

export function create(variant) {
  let clients = [];
  const adapter = {
    name: variants.find((v) => v.variant === variant).label,
    lost: 0,
    async setup(ports) {
      clients = await connect(ports);
    },
    async lock(key, ttlMs = TTL_MS) {
      const options = { ...SETTINGS[variant], lockTimeout: ttlMs, onLockLost: () => { adapter.lost++; } };
      const mutex = clients.length === 1 ? new Mutex(clients[0], key, options) : new RedlockMutex(clients, key, options);
      await mutex.acquire();
      return () => mutex.release();
    },
    // Each Mutex refreshes itself on its own interval timer while held.
    hold: (key, ttlMs) => adapter.lock(key, ttlMs),
    async teardown() {
      await disconnect(clients);
    },
  };
  return adapter;
}
