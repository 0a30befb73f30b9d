/**
 * What surelock uses of each node-redis client kind (a client to one server, a cluster client, a
 * Sentinel client): the shapes the adapters and their subscribers are written against, and how
 * each kind is recognised.
 */

/** Any event listener. */
export type Listener = (...args: never[]) => void;
/** node-redis' pub/sub listener. */
export type MessageListener = (message: string, channel: string) => void;

/** The ways node-redis clients close (they differ by version and kind). */
export interface Closable {
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** The parts of a node-redis client that we use. */
export interface NodeRedisLike extends Closable {
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  sSubscribe?(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe?(channel: string): Promise<unknown>;
  isOpen: boolean;
  options?: { url?: string; socket?: { host?: string; port?: number } };
  /** node-redis 6.3+: the `keyPrefix` option (applied by its typed commands, not by sendCommand). */
  readonly _keyPrefix?: unknown;
}

/** What node-redis' cluster client calls a node. */
interface ClusterNodeLike {
  readonly address?: string;
}

/** The parts of a node-redis cluster client that we use. */
export interface NodeRedisClusterLike extends Closable {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  duplicate(overrides?: Record<string, unknown>): NodeRedisClusterLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  sSubscribe(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
  masters: unknown;
  getSlotMaster?(slot: number): ClusterNodeLike;
  nodeByAddress?: Map<string, ClusterNodeLike>;
  nodeClient?(node: ClusterNodeLike): Promise<NodeRedisLike> | NodeRedisLike;
  readonly _keyPrefix?: unknown;
}

/** The parts of a node-redis Sentinel client (`createSentinel`, node-redis v5+) that we use. */
export interface NodeRedisSentinelLike extends Closable {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  duplicate(): NodeRedisSentinelLike;
  connect(): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  getMasterNode(): { host: string; port: number } | undefined;
  /** Runs `fn` on one pooled connection to the primary, reserved for it meanwhile. */
  use?<T>(fn: (client: { sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown> }) => Promise<T>): Promise<T>;
  readonly _keyPrefix?: unknown;
}

/** A node-redis Sentinel client (`createSentinel`). */
export function isNodeRedisSentinel(client: unknown): client is NodeRedisSentinelLike {
  const c = client as Partial<NodeRedisSentinelLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.getMasterNode === "function"
  );
}

/** A node-redis client to one server. */
export function isNodeRedis(client: unknown): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" &&
    typeof c.connect === "function" && !("masters" in c) && !isNodeRedisSentinel(c)
  );
}

/** A node-redis cluster client (`createCluster`). */
export function isNodeRedisCluster(client: unknown): client is NodeRedisClusterLike {
  const c = client as Partial<NodeRedisClusterLike> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof c.sendCommand === "function" && typeof c.duplicate === "function" && "masters" in c
  );
}
