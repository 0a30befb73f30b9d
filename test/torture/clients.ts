/**
 * The ioredis clients of a worker, built from its ClientSpec: every connection goes through a
 * fault proxy. Clients fail within a bounded time (one retry, quick reconnects) so that faults
 * show up as errors the history records, not as hangs.
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { ClientSpec } from "./ipc.js";

export interface WorkerClients {
  /** What the Surelock instances get: one client, or one per node in quorum mode. */
  readonly lockClients: Redis | Cluster | Redis[];
  /** Where the sections' plain counters live. */
  readonly data: Redis | Cluster;
  /** Every client made, to close at the end. */
  readonly all: readonly (Redis | Cluster)[];
}

export function makeClients(spec: ClientSpec, autoResend: boolean): WorkerClients {
  const base: RedisOptions = {
    autoResendUnfulfilledCommands: autoResend,
    maxRetriesPerRequest: 1,
    connectTimeout: 1_000,
    retryStrategy: () => 50,
    // A primary demoted by a failover answers READONLY: reconnect (through Sentinel) to the new one.
    reconnectOnError: (error) => error.message.startsWith("READONLY"),
  };
  const quiet = <T extends Redis | Cluster>(c: T): T => {
    c.on("error", () => {}); // faults are expected; surelock and the history report what matters
    return c;
  };
  switch (spec.kind) {
    case "single": {
      const c = quiet(new Redis({ ...base, host: spec.node.host, port: spec.node.port }));
      return { lockClients: c, data: c, all: [c] };
    }
    case "sentinel": {
      const c = quiet(new Redis({
        ...base, sentinels: [...spec.sentinels], name: spec.name, natMap: { ...spec.natMap },
        failoverDetector: true, sentinelRetryStrategy: () => 100,
      }));
      return { lockClients: c, data: c, all: [c] };
    }
    case "cluster": {
      const c = quiet(new Cluster([...spec.startup], {
        natMap: { ...spec.natMap }, redisOptions: base, clusterRetryStrategy: () => 100, slotsRefreshTimeout: 1_000,
      }));
      return { lockClients: c, data: c, all: [c] };
    }
    case "quorum": {
      // As docs/quorum.md advises: no offline queue, so a dead node fails at once.
      const nodes = spec.nodes.map((n) => quiet(new Redis({ ...base, host: n.host, port: n.port, enableOfflineQueue: false })));
      const data = quiet(new Redis({ ...base, host: spec.data.host, port: spec.data.port }));
      return { lockClients: nodes, data, all: [...nodes, data] };
    }
  }
}

/** Resolves once every client is ready; rejects after `ms`. */
export async function whenReady(clients: readonly (Redis | Cluster)[], ms: number): Promise<void> {
  await Promise.all(clients.map((c) => new Promise<void>((resolve, reject) => {
    if (c.status === "ready") return resolve();
    const timer = setTimeout(() => reject(new Error(`client not ready within ${ms} ms (status ${c.status})`)), ms);
    c.once("ready", () => {
      clearTimeout(timer);
      resolve();
    });
  })));
}

/**
 * Resolves once every command sent on these clients before the call has been answered: a PING
 * queues behind them on the connection (on every master of a Cluster). A surelock call whose own
 * deadline passed may still be waiting for its reply in the user's client, and its adapter keeps
 * a 'close' listener until that reply comes; that is not something left behind.
 */
export async function drained(clients: readonly (Redis | Cluster)[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`commands not answered within ${ms} ms`)), ms);
  });
  const pings = clients.map((c) =>
    c instanceof Cluster ? Promise.all(c.nodes("master").map((n) => n.ping())) : c.ping());
  try {
    await Promise.race([Promise.all(pings), late]);
  } finally {
    clearTimeout(timer);
  }
}
