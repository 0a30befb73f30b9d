/**
 * Runs one script at a time on a real redis-server, through the same typed bindings the stores use,
 * and reads back the keys it touched, so each test states a script's invariant against Redis
 * itself: run it, replay the same call (a reply lost, the client sends it again), compare.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { Endpoint } from "../../src/adapters/endpoint.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import { systemClock } from "../../src/clock.js";
import { KeySpace, type ExclusiveKeys, type SharedKeys } from "../../src/keys.js";
import type { ScriptCall } from "../../src/protocol/index.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

export interface ScriptBench {
  readonly server: RedisServer;
  readonly redis: Redis;
  readonly endpoint: Endpoint;
  run<R>(call: ScriptCall<R>): Promise<R>;
  /** Runs `call` twice, as a client that lost the first reply would: both replies, and Redis after each. */
  replay<R>(call: ScriptCall<R>, keys: readonly string[]): Promise<{ first: R; second: R; after: Snapshot; again: Snapshot }>;
  snapshot(keys: readonly string[]): Promise<Snapshot>;
  exclusive(key: string): ExclusiveKeys;
  shared(key: string, kind: "rw" | "sem"): SharedKeys;
  /** Messages published on `channel` from now on. */
  listen(channel: string): Promise<{ messages: string[]; close(): void }>;
  close(): Promise<void>;
}

/** What Redis holds under some keys: each key's type, contents, and whether it expires. */
export type Snapshot = Record<string, { type: string; value: unknown; expires: "yes" | "never" | "missing" }>;

export async function scriptBench(): Promise<ScriptBench> {
  const server = await startStandalone();
  const redis = new Redis({ port: server.port, host: server.host });
  const endpoint = new Endpoint(new IoredisAdapter(redis), { clock: systemClock, timeoutMs: 5_000 });
  const space = new KeySpace("t");
  const snapshot = async (keys: readonly string[]): Promise<Snapshot> => {
    const out: Snapshot = {};
    for (const key of keys) {
      const type = (await redis.type(key)) as string;
      const pttl = await redis.pttl(key);
      let value: unknown = null;
      if (type === "hash") value = Object.fromEntries(Object.entries(await redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : 1)));
      else if (type === "zset") value = await redis.zrange(key, 0, -1, "WITHSCORES");
      else if (type === "list") value = await redis.lrange(key, 0, -1);
      else if (type === "string") value = await redis.get(key);
      out[key] = { type, value, expires: pttl >= 0 ? "yes" : pttl === -1 ? "never" : "missing" };
    }
    return out;
  };
  return {
    server,
    redis,
    endpoint,
    run: (call) => endpoint.run(call),
    async replay(call, keys) {
      const first = await endpoint.run(call);
      const after = await snapshot(keys);
      const second = await endpoint.run(call);
      const again = await snapshot(keys);
      return { first, second, after, again };
    },
    snapshot,
    exclusive: (key) => space.exclusive(key),
    shared: (key, kind) => space.shared(key, kind),
    async listen(channel) {
      const sub = redis.duplicate();
      const messages: string[] = [];
      sub.on("message", (_: string, message: string) => messages.push(message));
      await sub.subscribe(channel);
      return { messages, close: () => sub.disconnect() };
    },
    async close() {
      redis.disconnect();
      await server.stop();
    },
  };
}

/** Every key of the snapshot that exists has a TTL: no script leaves a key that lives forever. */
export function assertAllExpire(snapshot: Snapshot): void {
  for (const [key, s] of Object.entries(snapshot)) assert.notEqual(s.expires, "never", `${key} has no TTL`);
}

/** The keys of a mutex, for snapshots. */
export const exclusiveKeys = (k: ExclusiveKeys): string[] => [k.lock, k.queue, k.tickets];
export const sharedKeys = (k: SharedKeys): string[] => [k.state, k.holders, k.entries, k.queue, k.tickets];

/** Replaces server-clock instants (13 digits of ms) in a snapshot, for state compared across a moment. */
export function withoutInstants(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(snapshot).replace(/\b1\d{12}\b/g, "<ms>"));
}
