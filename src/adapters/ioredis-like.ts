/**
 * What surelock uses of an ioredis `Redis` or `Cluster` client: the shapes the adapter, its
 * subscriber and its cluster helpers are written against, and how a client is recognised.
 */
import type { RedisArg } from "./types.js";

/** Any event listener. */
export type Listener = (...args: never[]) => void;

/** The parts of an ioredis pipeline that we use. */
export interface IoredisPipelineLike {
  call(command: string, ...args: RedisArg[]): IoredisPipelineLike;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The parts of an ioredis `Redis` or `Cluster` that we use. */
export interface IoredisLike {
  call(command: string, ...args: RedisArg[]): Promise<unknown>;
  duplicate(override?: Record<string, unknown>): IoredisLike;
  pipeline(): IoredisPipelineLike;
  on(event: string, listener: Listener): unknown;
  once(event: string, listener: Listener): unknown;
  connect(): Promise<unknown>;
  removeListener?(event: string, listener: () => void): unknown;
  status: string;
  isCluster?: boolean;
  options?: {
    host?: string; port?: number; name?: string; sentinels?: unknown[] | null; keyPrefix?: string;
    autoResendUnfulfilledCommands?: boolean; redisOptions?: { keyPrefix?: string; autoResendUnfulfilledCommands?: boolean };
  };
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  ssubscribe?(...channels: string[]): Promise<unknown>;
  sunsubscribe?(...channels: string[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  /** Cluster only: slot -> node keys (`host:port`), the primary first. */
  slots?: string[][];
  /** Cluster only: the connection of each node. */
  nodes?(role?: "all" | "master" | "slave"): IoredisLike[];
  /** Cluster only. */
  refreshSlotsCache?(): void;
}

export function isIoredis(client: unknown): client is IoredisLike {
  const c = client as Partial<IoredisLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.call === "function" && typeof c.duplicate === "function" &&
    typeof c.status === "string"
  );
}
