/**
 * The Redis deployments a torture run can use, each with a fault proxy in front of every server
 * (data nodes and Sentinels alike): what the workers connect to, what the nemesis may fault, and
 * where the orchestrator reads keys at the end (directly, not through the proxies).
 */
import {
  startCluster, startPrimaries, startSentinelSet, startStandalone, type RedisServer, type RespReply,
} from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import type { ClientSpec, HostPort } from "./ipc.js";
import type { DeploymentKind } from "./plan.js";
import type { Rng } from "./prng.js";

/** A Redis server the nemesis may fault, with the proxy the workers reach it through. */
export interface DataNode {
  readonly name: string;
  readonly server: RedisServer;
  readonly proxy: FaultProxy;
  /** AOF with fsync on every write: a restart forgets nothing that was acknowledged. */
  readonly persistent: boolean;
}

export interface Deployment {
  readonly kind: DeploymentKind;
  readonly nodes: readonly DataNode[];
  /** Servers no fault touches (Sentinels, quorum mode's counter server), with their proxies. */
  readonly others: readonly DataNode[];
  readonly spec: ClientSpec;
  /** Sentinel: ask for a failover. */
  readonly failover?: () => Promise<void>;
  /** The node that is primary now (Sentinel), for faults aimed at "the primary". */
  primary(): Promise<DataNode | undefined>;
  /** The servers that hold surelock's keys now (primaries; every node in quorum mode). */
  lockServers(): Promise<RedisServer[]>;
  /** The servers that hold the counters and the guarded logs. */
  dataServers(): Promise<RedisServer[]>;
  describe(): string;
  stop(): Promise<void>;
}

/** AOF with fsync always: persistence that loses no acknowledged write. */
const PERSISTENT = ["--appendonly", "yes", "--appendfsync", "always"];
/** Keys expire on time even when nobody reads them (the default 10 Hz is fine, this is explicit). */
const COMMON = ["--hz", "10"];

async function proxied(name: string, server: RedisServer, persistent: boolean): Promise<DataNode> {
  return { name, server, persistent, proxy: await startFaultProxy(server, { name: name, framing: "resp" }) };
}

const addr = (h: HostPort): string => `${h.host}:${h.port}`;
const natMapOf = (nodes: readonly DataNode[]): Record<string, HostPort> =>
  Object.fromEntries(nodes.map((n) => [addr(n.server), { host: n.proxy.host, port: n.proxy.port }]));
const viaProxy = (n: DataNode): HostPort => ({ host: n.proxy.host, port: n.proxy.port });

export interface DeploymentOptions {
  readonly kind: DeploymentKind;
  /** Quorum mode: how many nodes (3 or 5). */
  readonly quorumNodes: number;
  /** Seeded: which servers run with persistence. */
  readonly rng: Rng;
}

export async function startDeployment(o: DeploymentOptions): Promise<Deployment> {
  switch (o.kind) {
    case "single": return single(o.rng.chance(0.5));
    case "sentinel": return sentinel(o.rng.chance(0.5));
    case "cluster": return cluster(o.rng.chance(0.5));
    case "quorum": return quorum(Array.from({ length: o.quorumNodes }, () => o.rng.chance(0.5)));
  }
}

function stopper(nodes: readonly DataNode[], servers: () => Promise<void>): () => Promise<void> {
  return async () => {
    await Promise.all(nodes.map((n) => n.proxy.close()));
    await servers();
  };
}

const persistence = (nodes: readonly DataNode[]): string =>
  nodes.map((n) => `${n.name}${n.persistent ? " (AOF always)" : " (no persistence)"}`).join(", ");

async function single(persistent: boolean): Promise<Deployment> {
  const server = await startStandalone({ args: [...COMMON, ...(persistent ? PERSISTENT : [])] });
  const node = await proxied("redis", server, persistent);
  return {
    kind: "single", nodes: [node], others: [], spec: { kind: "single", node: viaProxy(node) },
    primary: async () => node,
    lockServers: async () => [server],
    dataServers: async () => [server],
    describe: () => `one redis-server: ${persistence([node])}`,
    stop: stopper([node], () => server.stop()),
  };
}

async function sentinel(persistent: boolean): Promise<Deployment> {
  const set = await startSentinelSet({ replicas: 1, sentinels: 3, args: [...COMMON, ...(persistent ? PERSISTENT : [])] });
  const nodes = await Promise.all([set.primary, ...set.replicas].map((s, i) => proxied(i === 0 ? "redis-a" : "redis-b", s, persistent)));
  const sentinels = await Promise.all(set.sentinels.map((s, i) => proxied(`sentinel${i}`, s, false)));
  const primary = async (): Promise<DataNode | undefined> => {
    const at = await set.currentPrimary().catch(() => undefined);
    return nodes.find((n) => at !== undefined && n.server.port === at.port);
  };
  return {
    kind: "sentinel", nodes, others: sentinels,
    spec: { kind: "sentinel", sentinels: sentinels.map(viaProxy), name: set.masterName, natMap: natMapOf(nodes) },
    failover: async () => {
      await (set.sentinels.find((s) => s.alive && !s.paused) ?? set.sentinels[0] as RedisServer)
        .commandWithTimeout(2_000, "SENTINEL", "FAILOVER", set.masterName);
    },
    primary,
    lockServers: async () => {
      const p = await primary();
      return p ? [p.server] : [];
    },
    dataServers: async () => {
      const p = await primary();
      return p ? [p.server] : [];
    },
    describe: () => `primary + replica + 3 Sentinels: ${persistence(nodes)}`,
    stop: stopper([...nodes, ...sentinels], () => set.stop()),
  };
}

async function cluster(persistent: boolean): Promise<Deployment> {
  const set = await startCluster({ primaries: 3, replicasPerPrimary: 0, args: [...COMMON, ...(persistent ? PERSISTENT : [])] });
  const nodes = await Promise.all(set.primaries.map((s, i) => proxied(`shard${i}`, s, persistent)));
  return {
    kind: "cluster", nodes, others: [],
    spec: { kind: "cluster", startup: nodes.map(viaProxy), natMap: natMapOf(nodes) },
    primary: async () => undefined,
    lockServers: async () => set.primaries,
    dataServers: async () => set.primaries,
    describe: () => `Cluster of 3 primaries: ${persistence(nodes)}`,
    stop: stopper(nodes, () => set.stop()),
  };
}

async function quorum(persistent: readonly boolean[]): Promise<Deployment> {
  const servers = await Promise.all(persistent.map((p) => startStandalone({ args: [...COMMON, ...(p ? PERSISTENT : [])] })));
  const nodes = await Promise.all(servers.map((s, i) => proxied(`node${i}`, s, persistent[i] ?? false)));
  // Counters live apart from the lock nodes (on one of them they would vanish with its restarts).
  const [dataServer] = await startPrimaries(1, { args: COMMON });
  const data = await proxied("data", dataServer as RedisServer, false);
  return {
    kind: "quorum", nodes, others: [data],
    spec: { kind: "quorum", nodes: nodes.map(viaProxy), data: viaProxy(data) },
    primary: async () => undefined,
    lockServers: async () => servers,
    dataServers: async () => [dataServer as RedisServer],
    describe: () => `quorum of ${nodes.length} independent primaries: ${persistence(nodes)}; counters on a separate server`,
    stop: stopper([...nodes, data], async () => {
      await Promise.all([...servers, dataServer as RedisServer].map((s) => s.stop()));
    }),
  };
}

/** Runs a command on whichever of `servers` owns the key (a Cluster answers MOVED elsewhere). */
export async function onOwner(servers: readonly RedisServer[], ...args: (string | number)[]): Promise<RespReply> {
  let last: unknown;
  for (const s of servers) {
    try {
      return await s.commandWithTimeout(3_000, ...args);
    } catch (error) {
      last = error;
      if (!/^(MOVED|ASK)\b/.test((error as Error).message)) throw error;
    }
  }
  throw last instanceof Error ? last : new Error(`no server owns ${String(args[1])}`);
}
