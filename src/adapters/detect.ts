/** Picks the adapter for whatever client the user passed. */
import { InvalidArgumentError } from "../errors.js";
import { IoredisAdapter } from "./ioredis.js";
import { isIoredis } from "./ioredis-like.js";
import { NodeRedisAdapter, NodeRedisSentinelAdapter } from "./node-redis.js";
import { isNodeRedis, isNodeRedisCluster, isNodeRedisSentinel } from "./node-redis-like.js";
import { NodeRedisClusterAdapter } from "./node-redis-cluster.js";
import type { RedisAdapter } from "./types.js";

/** An ioredis `Redis` or `Cluster` (Sentinel-backed too), as surelock recognises it. */
export interface IoredisClient {
  /** Sends any command (surelock sends EVALSHA, EVAL and a few others through it). */
  call(command: string, ...args: never[]): Promise<unknown>;
  /** Opens another connection like this one (for wake-ups). */
  duplicate(...args: never[]): unknown;
  /** The connection's state, as ioredis reports it. */
  readonly status: string;
}

/** A node-redis client, cluster or Sentinel client (v4+), as surelock recognises it. */
export interface NodeRedisClient {
  /** Sends any command. */
  sendCommand(...args: never[]): Promise<unknown>;
  /** Opens another client like this one (for wake-ups). */
  duplicate(...args: never[]): unknown;
}

/**
 * A Redis client: an ioredis `Redis` or `Cluster`, a node-redis client, cluster or Sentinel client,
 * or an object implementing `RedisAdapter` for any other client.
 */
export type RedisClient = IoredisClient | NodeRedisClient | RedisAdapter;

function isAdapter(value: unknown): value is RedisAdapter {
  const v = value as Partial<RedisAdapter> | null;
  return (
    typeof v === "object" && v !== null &&
    typeof v.evalsha === "function" && typeof v.eval === "function" &&
    typeof v.command === "function" && typeof v.createSubscriber === "function"
  );
}

export function toAdapter(client: unknown, argument: string): RedisAdapter {
  if (isAdapter(client)) return client;
  if (isIoredis(client)) return new IoredisAdapter(client);
  if (isNodeRedisCluster(client)) return new NodeRedisClusterAdapter(client);
  if (isNodeRedisSentinel(client)) return new NodeRedisSentinelAdapter(client);
  if (isNodeRedis(client)) return new NodeRedisAdapter(client);
  throw new InvalidArgumentError(argument, client, "an ioredis Redis or Cluster, a node-redis client, cluster or Sentinel client (v4+), " +
    "or a RedisAdapter (mocks such as ioredis-mock are not Redis: see docs/testing.md for the in-memory Redis surelock supports)");
}
