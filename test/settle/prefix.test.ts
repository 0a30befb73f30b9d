/**
 * Clients with a key prefix of their own (ioredis `keyPrefix`, node-redis 6.3+ `keyPrefix`): every
 * surelock key lands inside the client's namespace, and the wake-up subscription is on the very
 * channel the scripts publish on (prefixed once, as their KEYS are), so a waiter is woken by the
 * release in milliseconds rather than found by its next ticket refresh. Standalone, Sentinel and
 * Cluster, against real servers.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { createClient, createCluster } from "redis";
import { Surelock, type SurelockOptions } from "../../src/index.js";
import { eventually, startsWaiting } from "../helpers/fixtures.js";
import { startCluster, startSentinelSet, startStandalone, type ClusterSet, type RedisServer, type SentinelSet } from "../helpers/redis-topology.js";
import { assertNoTrace, settles } from "./support.js";

type Count = (channel: string) => Promise<number>;

/** Subscribers of `channel` on a standalone server (classic pub/sub). */
const classic = (server: RedisServer): Count => async (channel) =>
  Number(((await server.command("PUBSUB", "NUMSUB", channel)) as [string, number])[1]);

/** Subscribers of a shard channel, summed over a Cluster's primaries. */
const sharded = (set: ClusterSet): Count => async (channel) => {
  let total = 0;
  for (const p of set.primaries) total += Number(((await p.command("PUBSUB", "SHARDNUMSUB", channel)) as [string, number])[1]);
  return total;
};

/**
 * A holder and a waiter (which would otherwise learn of its grant from a ticket refresh, once a
 * second): the waiter subscribes to `<prefix>surelock:{key}:wake` — once prefixed — and the
 * release wakes it. Returns how long the handoff took.
 */
async function handoff(holderSide: Surelock, waiterSide: Surelock, key: string, prefix: string, count: Count): Promise<number> {
  const held = await holderSide.mutex(key).acquire();
  const waits = startsWaiting(key);
  const next = settles(waiterSide.mutex(key).acquire({ timeout: 10_000 }), 10_000);
  await waits;
  const channel = `${prefix}surelock:{${key}}:wake`;
  await eventually(async () => (await count(channel)) === 1, 5_000, `a subscriber on ${channel}`);
  assert.equal(await count(`${prefix}${channel}`), 0, "not subscribed to a twice-prefixed channel");
  const releasedAt = performance.now();
  await held.release();
  const s = await next;
  assert.ok(s.ok, String((s as { error?: unknown }).error));
  const tookMs = performance.now() - releasedAt;
  await s.value.release();
  return tookMs;
}

/** Keys under the client's prefix, none outside it. */
async function assertKeysPrefixed(server: { command(...args: (string | number)[]): Promise<unknown> }, prefix: string): Promise<void> {
  assert.deepEqual(await server.command("KEYS", "surelock:*"), [], "no surelock key outside the client's prefix");
  assert.ok(((await server.command("KEYS", `${prefix}surelock:*`)) as string[]).length > 0, "surelock keys under the client's prefix");
}

describe("key prefixes of the client: keys inside, wake-ups on time", () => {
  let server: RedisServer;
  let sentinel: SentinelSet;
  let cluster: ClusterSet;
  const closers: (() => Promise<unknown> | void)[] = [];
  before(async () => {
    [server, sentinel, cluster] = await Promise.all([startStandalone(), startSentinelSet({ replicas: 1, sentinels: 3 }), startCluster({ primaries: 3 })]);
  });
  after(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await Promise.all([server.stop(), sentinel.stop(), cluster.stop()]);
  });

  const surelock = (redis: SurelockOptions["redis"]): Surelock => {
    const locks = new Surelock({ redis, pollInterval: 60_000 });
    closers.push(() => locks.close());
    return locks;
  };
  const ioredis = (options: RedisOptions): Redis => {
    const redis = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1, ...options });
    redis.on("error", () => {});
    closers.push(() => redis.disconnect());
    return redis;
  };

  it("ioredis keyPrefix, standalone", async () => {
    const took = await handoff(surelock(ioredis({ keyPrefix: "app:" })), surelock(ioredis({ keyPrefix: "app:" })), "std", "app:", classic(server));
    assert.ok(took < 900, `handoff took ${took.toFixed(0)} ms`);
    await assertKeysPrefixed(server, "app:");
    await assertNoTrace(server, "app:surelock");
  });

  it("ioredis keyPrefix, Sentinel", async () => {
    const make = (): Redis => {
      const redis = new Redis({ sentinels: sentinel.sentinelAddresses(), name: sentinel.masterName, keyPrefix: "app:", maxRetriesPerRequest: 1 });
      redis.on("error", () => {});
      closers.push(() => redis.disconnect());
      return redis;
    };
    const took = await handoff(surelock(make()), surelock(make()), "sen", "app:", classic(sentinel.primary));
    assert.ok(took < 900, `handoff took ${took.toFixed(0)} ms`);
    await assertKeysPrefixed(sentinel.primary, "app:");
  });

  for (const where of ["top level", "redisOptions"] as const) {
    it(`ioredis keyPrefix, Cluster (prefix given at the ${where})`, async () => {
      const make = (): Cluster => {
        const c = where === "top level"
          ? new Cluster(cluster.startupNodes(), { keyPrefix: "app:", redisOptions: { maxRetriesPerRequest: 2 } })
          : new Cluster(cluster.startupNodes(), { redisOptions: { keyPrefix: "app:", maxRetriesPerRequest: 2 } });
        c.on("error", () => {});
        closers.push(() => c.disconnect());
        return c;
      };
      const key = `clu-${where === "top level" ? "a" : "b"}`;
      const took = await handoff(surelock(make()), surelock(make()), key, "app:", sharded(cluster));
      assert.ok(took < 900, `handoff took ${took.toFixed(0)} ms`);
    });
  }

  it("node-redis keyPrefix, standalone: applied to keys and channels alike", async () => {
    const make = async (): Promise<SurelockOptions["redis"]> => {
      const c = createClient({ socket: { host: server.host, port: server.port }, keyPrefix: "nr:" });
      c.on("error", () => {});
      await c.connect();
      closers.push(() => c.destroy());
      return c;
    };
    const took = await handoff(surelock(await make()), surelock(await make()), "nrs", "nr:", classic(server));
    assert.ok(took < 900, `handoff took ${took.toFixed(0)} ms`);
    await assertKeysPrefixed(server, "nr:");
    await assertNoTrace(server, "nr:surelock");
  });

  it("the fencing guard's highestToken reads the guard its writes made (ioredis and node-redis keyPrefix)", async () => {
    const nodeRedis = createClient({ socket: { host: server.host, port: server.port }, keyPrefix: "gnr:" });
    nodeRedis.on("error", () => {});
    await nodeRedis.connect();
    closers.push(() => nodeRedis.destroy());
    for (const [redis, prefix] of [[ioredis({ keyPrefix: "gio:" }), "gio:"], [nodeRedis, "gnr:"]] as const) {
      const locks = surelock(redis);
      const lease = await locks.mutex("stock").acquire();
      const guard = locks.guard("stock");
      assert.deepEqual(await guard.write(lease.fencingToken, "SET", "{stock}:units", "9"), { written: true, reply: "OK" });
      assert.equal(await guard.highestToken(), lease.fencingToken, `${prefix}: highestToken through command() finds the prefixed guard`);
      assert.equal(await server.command("GET", `${prefix}{stock}:units`), "9");
      await lease.release();
    }
  });

  it("node-redis keyPrefix, Cluster", async () => {
    const make = async (): Promise<SurelockOptions["redis"]> => {
      const c = createCluster({ rootNodes: cluster.startupNodes().map((n) => ({ url: `redis://${n.host}:${n.port}` })), keyPrefix: "nr:" });
      c.on("error", () => {});
      await c.connect();
      closers.push(() => c.destroy());
      return c;
    };
    const took = await handoff(surelock(await make()), surelock(await make()), "nrc", "nr:", sharded(cluster));
    assert.ok(took < 900, `handoff took ${took.toFixed(0)} ms`);
  });
});
