// The redlock 5 API, shared by the redlock 5 beta and its maintained fork: acquire(keys, ttl),
// release(), auto-extension only inside `using()`. Defaults as v4 (retryCount 10, retryDelay
// 200 ms, retryJitter 100 ms); "fast": 2 ms / 1 ms, retry forever.
import { TTL_MS, connect, disconnect, holdWithUsing } from "./common.mjs";

export const REDLOCK_SETTINGS = {
  default: {},
  fast: { retryCount: -1, retryDelay: 2, retryJitter: 1 },
};

/** The bench adapter for a library with redlock 5's API; `label` names its rows. */
export function redlockFamily(Redlock, label) {
  const variants = [
    { variant: "default", label },
    { variant: "fast", label: `${label} (fast)` },
  ];
  function create(variant) {
    let clients = [];
    let redlock;
    const adapter = {
      name: variants.find((v) => v.variant === variant).label,
      lost: 0,
      async setup(ports) {
        clients = await connect(ports);
        redlock = new Redlock(clients, REDLOCK_SETTINGS[variant]);
        redlock.on("error", () => {});
      },
      async lock(key, ttlMs = TTL_MS) {
        const lock = await redlock.acquire([key], ttlMs);
        return () => lock.release();
      },
      hold: (key, ttlMs) => holdWithUsing(redlock, adapter, key, ttlMs),
      async teardown() {
        await disconnect(clients);
      },
    };
    return adapter;
  }
  return { variants, create };
}
