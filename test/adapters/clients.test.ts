/** The same behaviour through each supported client: ioredis and node-redis. */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { LockLostError, Surelock, type RedisClient } from "../../src/index.js";
import { aborted, assertEveryKeyExpires, eventually, quietFor, startsWaiting, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import type { RedisSubscriber } from "../../src/adapters/types.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";

interface ClientKind {
  name: string;
  make(port: number): Promise<{ client: object; close(): Promise<void> }>;
}

const kinds: ClientKind[] = [
  {
    name: "ioredis",
    make: async (port) => {
      const client = new Redis({ port, maxRetriesPerRequest: 1 });
      client.on("error", () => {});
      return { client, close: async () => { client.disconnect(); } };
    },
  },
  {
    name: "node-redis",
    make: async (port) => {
      const client = createClient({ socket: { port, host: "127.0.0.1", reconnectStrategy: () => 50 } });
      client.on("error", () => {});
      await client.connect();
      return { client, close: async () => { client.destroy(); } };
    },
  },
];

describe("with an ioredis client created with lazyConnect", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("a waiter subscribes for wake-ups: the wake-up connection is connected, not left lazy", async () => {
    const client = new Redis({ port: server.port, lazyConnect: true });
    const locks = new Surelock({ redis: client });
    try {
      const holder = await locks.mutex("lazy").acquire();
      const waiter = locks.mutex("lazy").acquire();
      const channel = "surelock:{lazy}:wake";
      await eventually(async () => Number(((await server.command("PUBSUB", "NUMSUB", channel)) as [string, number])[1]) === 1,
        1_000, "the waiter's subscription (a lazy wake-up connection would wait out a 2 s ready timeout)");
      await holder.release();
      await (await within(3_000, waiter)).release();
    } finally {
      await locks.close();
      client.disconnect();
    }
  });
});

describe("an ioredis wake-up connection that is not ready yet", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("lets any number of subscribes wait for it without a MaxListenersExceededWarning (issue 24)", async () => {
    const proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const client = new Redis({ host: proxy.host, port: proxy.port });
    client.on("error", () => {});
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => { warnings.push(w); };
    process.on("warning", onWarning);
    let subscriber: RedisSubscriber | undefined;
    try {
      await client.ping();
      // The wake-up connection opens into a blackhole: it stays "not ready" until the heal.
      proxy.blackhole();
      const sub = (subscriber = await new IoredisAdapter(client).createSubscriber());
      const subscribes = Array.from({ length: 12 }, (_, i) => sub.subscribe(`many:${i}`));
      await quietFor(100);
      proxy.heal("deliver");
      await within(3_000, Promise.all(subscribes));
      assert.equal(Number(((await server.command("PUBSUB", "NUMSUB", "many:11")) as [string, number])[1]), 1);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message), []);
    } finally {
      process.off("warning", onWarning);
      await subscriber?.close();
      client.disconnect();
      await proxy.close();
    }
  });
});

for (const kind of kinds) {
  describe(`with a ${kind.name} client`, () => {
    let server: RedisServer;
    const closers: (() => Promise<void>)[] = [];
    const locksFor = async (options: { ttl?: number; commandTimeout?: number } = {}): Promise<Surelock> => {
      const { client, close } = await kind.make(server.port);
      const locks = new Surelock({ redis: client as RedisClient, ...options });
      closers.push(async () => { await locks.close(); await close(); });
      return locks;
    };
    before(async () => { server = await startStandalone(); });
    afterEach(async () => {
      for (const close of closers.splice(0)) await close();
      await assertEveryKeyExpires(server);
      await server.command("FLUSHALL");
    });
    after(() => server.stop());

    it("acquires with one script call, re-enters, and releases", async () => {
      const locks = await locksFor();
      await (await locks.mutex("warm-up").acquire()).release(); // loads the scripts (EVALSHA, NOSCRIPT, EVAL)
      await server.command("CONFIG", "RESETSTAT");
      const value = await locks.withLock("k", async (outer) =>
        locks.withLock("k", async (inner) => {
          assert.equal(inner.fencingToken, outer.fencingToken);
          return server.command("HGET", "surelock:{k}:lock", "n");
        }));
      assert.equal(value, "2");
      const stats = await server.info("commandstats");
      const calls = (name: string): number => Number(/calls=(\d+)/.exec(stats[`cmdstat_${name}`] ?? "")?.[1] ?? 0);
      assert.equal(calls("evalsha") + calls("eval"), 4, "acquire, re-enter, release, release: one script call each");
    });

    it("hands the lock over between contending workers by wake-ups", async () => {
      const locks = await locksFor();
      let inside = 0;
      let sections = 0;
      await within(20_000, Promise.all(Array.from({ length: 6 }, async () => {
        for (let i = 0; i < 30; i++) {
          await locks.withLock("contended", async () => {
            assert.equal(++inside, 1);
            await quietFor(1);
            inside--;
            sections++;
          });
        }
      })));
      assert.equal(sections, 180);
    });

    it("renews while held and aborts the signal when the lock is taken away", async () => {
      const locks = await locksFor({ ttl: 300 });
      const lease = await locks.mutex("renewed").acquire();
      await quietFor(700);
      assert.equal(await lease.isHeld(), true, "still held after more than two ttls");
      await server.command("DEL", "surelock:{renewed}:lock");
      const reason = await aborted(lease.signal, 2_000);
      assert.ok(reason instanceof LockLostError);
    });

    it("a second instance waits for the first and then gets a larger token", async () => {
      const a = await locksFor();
      const b = await locksFor();
      const first = await a.mutex("two").acquire();
      const waiting = startsWaiting("two");
      const second = b.mutex("two").acquire({ timeout: 5_000 });
      await waiting;
      await first.release();
      const lease = await within(3_000, second);
      assert.ok(lease.fencingToken > first.fencingToken);
      await lease.release();
    });

    it("Redis paused: the call fails with ConnectionError within the command timeout", async () => {
      const locks = await locksFor({ commandTimeout: 300 });
      await (await locks.mutex("warm").acquire()).release();
      await server.pause();
      try {
        await within(3_000, assert.rejects(locks.mutex("down").tryAcquire(), { code: "ERR_SURELOCK_CONNECTION" }));
      } finally {
        await server.resume();
      }
    });
  });
}
