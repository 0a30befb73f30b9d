// Shared pieces of the quorum tests: fast-failing clients, waits with deadlines, checks of
// Redis state on every node, and putting killed or stopped nodes back.
import assert from "node:assert/strict";
import { after, afterEach, before } from "node:test";
import { performance } from "node:perf_hooks";
import { Redis, type RedisOptions } from "ioredis";
import { Surelock } from "../../src/index.js";
import { within } from "../helpers/fixtures.js";
import { startPrimaries, stopAll, type RedisServer } from "../helpers/redis-topology.js";

export const HOST = "127.0.0.1";

/**
 * A client for a node that will go down: no offline queue (a command to a dead node fails at
 * once instead of waiting for a reconnect), one retry, reconnect every 100 ms.
 */
export function fastClient(port: number, extra: RedisOptions = {}): Redis {
  const client = new Redis({
    host: HOST, port, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 100, ...extra,
  });
  client.on("error", () => {}); // a dead node is expected; surelock reports what matters
  return client;
}

/** Resolves once `client` is ready; rejects after `ms`. */
export function ready(client: Redis, ms = 5_000): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return within(ms, new Promise<void>((resolve) => {
    client.once("ready", () => resolve());
  }), `client for port ${String(client.options.port)} to be ready`);
}

export { within } from "../helpers/fixtures.js";

/** Only to prove that something did NOT happen in a window (or to wait out a documented delay). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves with the moment (performance.now()) `signal` aborts; rejects after `ms`. */
export function abortedAt(signal: AbortSignal, ms: number): Promise<number> {
  if (signal.aborted) return Promise.resolve(performance.now());
  return within(ms, new Promise<number>((resolve) => {
    signal.addEventListener("abort", () => resolve(performance.now()), { once: true });
  }), "the lease's signal to abort");
}

/** Polls `check` until truthy, for Redis state that has no event to wait on. */
export async function eventually(ms: number, what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await Promise.resolve().then(check).catch(() => false)) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(20);
  }
}

/** Nodes that can answer right now. */
export const up = (nodes: readonly RedisServer[]): RedisServer[] => nodes.filter((n) => n.alive && !n.paused);

/** The holder hash of a mutex `key` under the default prefix. */
export const lockKey = (key: string): string => `surelock:{${key}}:lock`;


/** 1 where the node holds mutex `key` (its lock hash has an owner), 0 elsewhere; in order. */
export async function heldOn(nodes: readonly RedisServer[], key: string): Promise<number[]> {
  return Promise.all(nodes.map(async (n) => Number(await n.command("HEXISTS", lockKey(key), "o"))));
}

/** Every surelock key on every reachable node has an expiry: none may live forever. */
export async function assertEveryKeyExpires(nodes: readonly RedisServer[]): Promise<void> {
  for (const node of up(nodes)) {
    const keys = await node.command("KEYS", "surelock:*");
    assert.ok(Array.isArray(keys));
    for (const key of keys) {
      const pttl = await node.command("PTTL", String(key));
      assert.notEqual(pttl, -1, `${String(key)} on port ${node.port} has no PTTL`);
    }
  }
}

/** Puts every node back: stopped ones continue, killed ones restart (empty). */
export async function restoreAll(nodes: readonly RedisServer[], clients: readonly Redis[] = []): Promise<void> {
  await Promise.all(nodes.map(async (n) => {
    if (n.paused) await n.resume();
    if (!n.alive) await n.restart();
  }));
  await Promise.all(clients.map((c) => ready(c)));
}

/** Waits until `client` has noticed its node is gone (so commands fail at once, not by timeout). */
export function noticedDown(client: Redis, ms = 5_000): Promise<void> {
  return eventually(ms, "the client to notice its node went down", () => client.status !== "ready");
}

/** Options of a quorum Surelock in these tests. */
export interface QuorumOptions {
  /** The node clients (default: all five). */
  readonly redis?: readonly Redis[];
  readonly pollInterval?: number;
  /** Per-node timeout; longer than the default where it is not the subject, for loaded machines. */
  readonly commandTimeout?: number;
}

/** Five independent primaries for one test file, with their fast-failing clients. */
export interface FiveNodes {
  readonly nodes: RedisServer[];
  readonly clients: Redis[];
  /** A Surelock over the nodes, closed after the test. */
  quorum(ttl: number, options?: QuorumOptions): Surelock;
  /** Kills nodes and waits until their clients noticed, so their commands fail at once. */
  kill(indexes: readonly number[]): Promise<void>;
  /** Closes the Surelocks made so far (before their clients go away). */
  closeAll(): Promise<void>;
}

/**
 * Starts five primaries before the file's tests and stops them after; after each test closes its
 * Surelocks, puts killed or stopped nodes back, and checks that no key lacks a TTL.
 */
export function fiveNodes(): FiveNodes {
  // Filled in place by the before hook, so a test file can hold on to the arrays from the start.
  const nodes: RedisServer[] = [];
  const clients: Redis[] = [];
  const opened: Surelock[] = [];
  before(async () => {
    nodes.push(...(await startPrimaries(5)));
    clients.push(...nodes.map((n) => fastClient(n.port)));
    await Promise.all(clients.map((c) => ready(c)));
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await stopAll();
  });
  const closeAll = async (): Promise<void> => { await Promise.all(opened.splice(0).map((l) => l.close())); };
  afterEach(async () => {
    await closeAll();
    await restoreAll(nodes, clients);
    await assertEveryKeyExpires(nodes);
  });
  return {
    nodes,
    clients,
    quorum(ttl, { redis = clients, commandTimeout = 500, pollInterval } = {}) {
      const locks = new Surelock({ redis, ttl, commandTimeout, ...(pollInterval !== undefined && { pollInterval }) });
      opened.push(locks);
      return locks;
    },
    closeAll,
    async kill(indexes) {
      await Promise.all(indexes.map(async (i) => {
        await nodes[i]?.kill();
        await noticedDown(clients[i] as Redis);
      }));
    },
  };
}
