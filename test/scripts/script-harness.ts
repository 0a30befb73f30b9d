/** Runs one script directly on a real server, so each script's invariant is tested on its own. */
import { Redis } from "ioredis";
import { Endpoint } from "../../src/adapters/endpoint.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import { KeySpace, type LockKeys } from "../../src/keys.js";
import { LUA } from "../../src/scripts/index.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

/** KEYS of acquire.lua for a lock. */
export const acquireKeys = (k: LockKeys): string[] => [k.lock, k.fence, k.shared, k.mark, k.queue, k.deadlines];

/** ARGV of acquire.lua: no ticket unless given. */
export const acquireArgs = (owner: string, ttl = 10_000, opts: { markMs?: number; ticket?: string; leaseMs?: number; requeue?: boolean } = {}): (string | number)[] =>
  [owner, ttl, 86_400_000, opts.markMs ?? 0, opts.ticket ?? "", opts.leaseMs ?? 3_000, opts.requeue ? "1" : "0"];

export interface ScriptBench {
  server: RedisServer;
  redis: Redis;
  run(name: keyof typeof LUA, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  keys(key: string, kind?: "mutex" | "rw" | "sem"): LockKeys;
  close(): Promise<void>;
}

export async function scriptBench(): Promise<ScriptBench> {
  const server = await startStandalone();
  const redis = new Redis({ port: server.port, host: server.host });
  const endpoint = new Endpoint(new IoredisAdapter(redis), 5_000);
  const space = new KeySpace("surelock");
  return {
    server,
    redis,
    run: (name, keys, args) => endpoint.run(LUA[name], keys, args),
    keys: (key, kind) => space.of(key, kind),
    close: async () => {
      redis.disconnect();
      await server.stop();
    },
  };
}
