// redlock 4.2 (the current release on npm). Defaults: retryCount 10, retryDelay 200 ms,
// retryJitter 100 ms; after 10 retries lock() rejects (the bench counts the error and asks
// again). "fast": retryDelay 2 ms, jitter 1 ms, retry forever. No auto-extension in v4.
import Redlock from "redlock";
import { TTL_MS, connect, disconnect } from "./common.mjs";
import { REDLOCK_SETTINGS as SETTINGS } from "./redlock-family.mjs";

export const variants = [
  { variant: "default", label: "redlock 4" },
  { variant: "fast", label: "redlock 4 (fast)" },
];

export function create(variant) {
  let clients = [];
  let redlock;
  return {
    name: variants.find((v) => v.variant === variant).label,
    async setup(ports) {
      clients = await connect(ports);
      redlock = new Redlock(clients, SETTINGS[variant]);
      redlock.on("clientError", () => {});
    },
    async lock(key, ttlMs = TTL_MS) {
      const lock = await redlock.lock(key, ttlMs);
      return () => lock.unlock();
    },
    hold: undefined,
    async teardown() {
      await disconnect(clients);
    },
  };
}
