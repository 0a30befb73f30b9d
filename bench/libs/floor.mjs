// The floor: a bare SET NX PX to take and a DEL to give back, on the same kind of ioredis client.
// Not a correct lock (DEL does not check the owner, nothing waits well); it shows what Redis and
// the client allow.
import { TTL_MS, connect, disconnect } from "./common.mjs";
import { sleep } from "../lib/clock.mjs";

export const variants = [{ variant: "default", label: "floor: SET NX PX + DEL" }];

export function create() {
  let client;
  return {
    name: variants[0].label,
    async setup(ports) {
      [client] = await connect(ports.slice(0, 1));
    },
    async lock(key, ttlMs = TTL_MS) {
      while ((await client.set(key, "1", "PX", ttlMs, "NX")) !== "OK") await sleep(1);
      return () => client.del(key);
    },
    hold: undefined,
    async teardown() {
      await disconnect([client]);
    },
  };
}
