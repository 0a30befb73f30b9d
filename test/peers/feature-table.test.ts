/**
 * Every claim the README's feature table makes about redlock (4.2 and 5.0 beta) and
 * redis-semaphore (5.8), checked against those very packages (dev dependencies) and a real
 * redis-server. Titles name the table's rows. Redisson cannot run here; its column comes from its
 * documentation (the table's footnote says so).
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import Redlock4 from "redlock";
import Redlock5 from "redlock5";
import * as redlock4Module from "redlock";
import * as redlock5Module from "redlock5";
import * as semaphoreModule from "redis-semaphore";
import { Mutex, MultiSemaphore, RedlockMutex, Semaphore } from "redis-semaphore";
import { defaultOnLockLost } from "redis-semaphore/lib/misc.js";
import { Surelock } from "../../src/index.js";
import { scripts } from "../../src/protocol/index.js";
import { eventually, quietFor, startsWaiting, within } from "../helpers/fixtures.js";
import { startPrimaries, startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { ready } from "../quorum/support.js";

/** Every command the server runs while `work` runs (MONITOR on a connection of `client`'s), as argument lists. */
async function onTheWire(client: Redis, work: () => Promise<void>): Promise<string[][]> {
  const m = await client.monitor();
  m.on("error", () => {});
  const seen: string[][] = [];
  m.on("monitor", (_time: string, args: string[]) => seen.push(args));
  try {
    await work();
    await quietFor(20); // the last commands' monitor lines are on their way
  } finally {
    m.disconnect();
  }
  return seen;
}
const mentions = (seen: string[][], key: string): string[][] => seen.filter((args) => args.some((a) => a.includes(key)));

describe("the README's feature table: redlock and redis-semaphore, checked", () => {
  let server: RedisServer;
  let redis: Redis;
  /** redis-semaphore locks a test took: each refreshes on its own timer until released. */
  const taken: { stopRefresh(): void }[] = [];
  const keep = <T extends { stopRefresh(): void }>(lock: T): T => {
    taken.push(lock);
    return lock;
  };
  before(async () => {
    server = await startStandalone();
    redis = new Redis(server.port);
  });
  afterEach(async () => {
    for (const lock of taken.splice(0)) lock.stopRefresh();
    await server.command("FLUSHALL");
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  it("primitives: mutexes everywhere; semaphores (and several permits at once) in redis-semaphore only; no read-write lock, latch or election in either", async () => {
    assert.deepEqual(Object.keys(redlock4Module).sort(), ["default"]);
    assert.deepEqual(Object.keys(Redlock4).sort(), ["Lock", "LockError"]);
    assert.deepEqual(Object.keys(redlock5Module).sort(), ["ExecutionError", "Lock", "ResourceLockedError", "default"]);
    assert.deepEqual(Object.keys(semaphoreModule).filter((k) => k !== "__esModule" && k !== "default").sort(), ["LostLockError", "MultiSemaphore", "Mutex", "RedlockMultiSemaphore", "RedlockMutex",
      "RedlockSemaphore", "Semaphore", "TimeoutError", "defaultTimeoutOptions"]);
    const permits = [keep(new Semaphore(redis, "pool", 2)), keep(new Semaphore(redis, "pool", 2))];
    for (const p of permits) await p.acquire();
    assert.equal(await new Semaphore(redis, "pool", 2, { acquireAttemptsLimit: 1 }).tryAcquire(), false);
    assert.equal(await keep(new MultiSemaphore(redis, "pool2", 3, 2)).tryAcquire(), true);
    assert.equal(await new MultiSemaphore(redis, "pool2", 3, 2, { acquireAttemptsLimit: 1 }).tryAcquire(), false, "2 of 3 taken, 2 more refused");
  });

  it("several keys at once: redlock takes an array of resources, all or none; redis-semaphore's Mutex names one key", async () => {
    const r4 = new Redlock4([redis], { retryCount: 0 });
    // Documented by redlock 4 ("Locking multiple resources"); its typings say string.
    const set4 = (keys: string[]): string => keys as unknown as string;
    await r4.lock(set4(["set4:a", "set4:b"]), 5_000);
    assert.equal(await redis.exists("set4:a", "set4:b"), 2, "both keys taken");
    await assert.rejects(r4.lock(set4(["set4:b", "set4:c"]), 5_000), { name: "LockError" });
    assert.equal(await redis.exists("set4:c"), 0, "nothing of the refused set was taken");
    const r5 = new Redlock5([redis], { retryCount: 0 });
    await r5.acquire(["set5:a", "set5:b"], 5_000);
    await assert.rejects(r5.acquire(["set5:b", "set5:c"], 5_000), { name: "ExecutionError" });
    assert.deepEqual([await redis.exists("set5:a", "set5:b"), await redis.exists("set5:c")], [2, 0]);
    // Its key is one string: an array of keys is refused.
    assert.throws(() => new Mutex(redis, ["rs:a", "rs:b"] as unknown as string), /"key" must be a string/);
    const surelock = new Surelock({ redis });
    const set = await surelock.multiLock(["sl:a", "sl:b"]).acquire();
    assert.equal(await surelock.multiLock(["sl:b", "sl:c"]).tryAcquire(), null);
    assert.equal(await redis.hexists("surelock:{sl:c}:lock", "o"), 0, "nothing of the refused set was taken");
    await set.release();
    await surelock.close();
  });

  it("reentrancy: a second acquisition of a lock held by the same code is refused, not entered", async () => {
    const r4 = new Redlock4([redis], { retryCount: 0 });
    await r4.lock("re4", 5_000);
    await assert.rejects(r4.lock("re4", 5_000), { name: "LockError" });
    const r5 = new Redlock5([redis], { retryCount: 0 });
    await r5.acquire(["re5"], 5_000);
    await assert.rejects(r5.acquire(["re5"], 5_000), { name: "ExecutionError" });
    const mutex = keep(new Mutex(redis, "re-rs", { acquireAttemptsLimit: 1 }));
    await mutex.acquire();
    assert.equal(await mutex.tryAcquire(), false, "the same Mutex object");
    assert.equal(await new Mutex(redis, "re-rs", { acquireAttemptsLimit: 1 }).tryAcquire(), false);
  });

  it("fencing: a lock is named by a random value, with no order between successive holders", async () => {
    const r5 = new Redlock5([redis]);
    const values: string[] = [];
    for (let i = 0; i < 3; i++) {
      const lock = await r5.acquire(["fence"], 5_000);
      values.push(lock.value);
      await lock.release();
    }
    for (const v of values) assert.match(v, /^[0-9a-f]{32}$/, "16 random bytes");
    const r4 = await new Redlock4([redis]).lock("fence4", 5_000);
    assert.match(r4.value, /^[0-9a-f]{32}$/);
    const mutex = new Mutex(redis, "fence-rs");
    await mutex.acquire();
    assert.match(mutex.identifier, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a random UUID");
    await mutex.release();
  });

  it("renewal while held: none in redlock 4, only inside using() in redlock 5, a timer per lock in redis-semaphore; fixed leases in all", async () => {
    const gone = (key: string) => eventually(async () => (await redis.exists(key)) === 0, 2_000, `${key} to expire`);
    await new Redlock4([redis]).lock("fixed4", 300);
    await gone("fixed4");
    const r5 = new Redlock5([redis]);
    await r5.acquire(["fixed5"], 300);
    await gone("fixed5");
    // using() extends a lock 500 ms (automaticExtensionThreshold) before it would expire.
    await r5.using(["renewed5"], 800, async () => {
      await quietFor(1_300); // proves it did not expire: extended before each expiry
      assert.equal(await redis.exists("renewed5"), 1);
    });
    const renewed = new Mutex(redis, "renewed-rs", { lockTimeout: 1_000 });
    await renewed.acquire();
    await quietFor(2_500);
    assert.equal(await redis.exists("mutex:renewed-rs"), 1, "refreshed every 0.8 × lockTimeout");
    await renewed.release();
    await new Mutex(redis, "fixed-rs", { lockTimeout: 300, refreshInterval: 0 }).acquire();
    await gone("mutex:fixed-rs");
  });

  it("the holder is told of a lost lock: redlock 5's using() signal, redis-semaphore's onLockLost (default: it throws from a timer)", async () => {
    const r5 = new Redlock5([redis], { retryCount: 0 });
    await r5.using(["lost5"], 700, async (signal) => {
      await redis.del("lost5");
      await within(2_000, new Promise((resolve) => signal.addEventListener("abort", resolve)), "using()'s signal");
      assert.equal(signal.error?.name, "ExecutionError");
    }).catch(() => {});
    let told: (error: Error) => void = () => {};
    const lost = new Promise<Error>((resolve) => { told = resolve; });
    const mutex = keep(new Mutex(redis, "lost-rs", { lockTimeout: 300, onLockLost: (error) => told(error) }));
    await mutex.acquire();
    await redis.del("mutex:lost-rs");
    assert.ok((await within(2_000, lost, "onLockLost")) instanceof semaphoreModule.LostLockError);
    // Without onLockLost, the refresh timer calls this default, which throws the error again.
    const error = new semaphoreModule.LostLockError("lost");
    assert.throws(() => defaultOnLockLost(error), (e: unknown) => e === error);
  });

  it("waiting: the peers retry on a timer and keep no queue; surelock is woken by the release and queues its waiters", async () => {
    /** Takes the lock, lets a second caller wait 500 ms for it, releases: the keys Redis had meanwhile. */
    const holdFor = async (take: () => Promise<() => Promise<unknown>>): Promise<string[]> => {
      const release = await take();
      const waiting = take();
      await quietFor(500);
      const keys = ((await server.command("KEYS", "*")) as string[]).sort();
      await release();
      await (await waiting)();
      return keys;
    };
    const counts: Record<string, number> = {};
    const rs = await onTheWire(redis, async () => {
      const keys = await holdFor(async () => {
        const m = new Mutex(redis, "poll-rs");
        await m.acquire();
        return () => m.release();
      });
      assert.deepEqual(keys, ["mutex:poll-rs"], "no queue: whoever retries first after the release wins");
    });
    counts["redis-semaphore (retryInterval 10 ms)"] = mentions(rs, "poll-rs").filter((a) => /^(set|evalsha|eval)$/i.test(a[0] ?? "")).length;
    const rl = await onTheWire(redis, async () => {
      const r5 = new Redlock5([redis]);
      const keys = await holdFor(async () => {
        const l = await r5.acquire(["poll5"], 5_000);
        return () => l.release();
      });
      assert.deepEqual(keys, ["poll5"]);
    });
    counts["redlock 5 (retryDelay 200 ± 100 ms)"] = mentions(rl, "poll5").filter((a) => /^(evalsha|eval)$/i.test(a[0] ?? "")).length;
    const locks = new Surelock({ redis });
    await (await locks.mutex("warm-up").acquire()).release(); // scripts cached: no NOSCRIPT round trip on the wire below
    const sl = await onTheWire(redis, async () => {
      const held = await locks.mutex("poll").acquire();
      const waits = startsWaiting("poll");
      const waiting = locks.mutex("poll").acquire();
      await waits;
      await quietFor(500);
      assert.ok(((await server.command("KEYS", "*")) as string[]).includes("surelock:{poll}:queue"), "a queue of tickets");
      await held.release();
      await (await waiting).release();
    });
    // Attempts and releases; a ticket refresh (keepalive, every second) is not an attempt.
    counts.surelock = mentions(sl, "{poll}").filter((a) => /^(evalsha|eval)$/i.test(a[0] ?? "") && a[1] !== scripts.keepalive.sha).length;
    await locks.close();
    console.log(`# script calls or SETs naming the lock while one waiter waited 500 ms, then got it: ${JSON.stringify(counts)}`);
    assert.equal(rs.some((a) => /subscribe/i.test(a[0] ?? "")) || rl.some((a) => /subscribe/i.test(a[0] ?? "")), false, "no peer subscribes");
    // Their defaults: redlock retries 10 times, 200 ± 100 ms apart; redis-semaphore every 10 ms.
    const r4 = new Redlock4([redis]);
    assert.deepEqual([r4.retryCount, r4.retryDelay, r4.retryJitter], [10, 200, 100]);
    const { retryCount, retryDelay, retryJitter } = new Redlock5([redis]).settings;
    assert.deepEqual([retryCount, retryDelay, retryJitter], [10, 200, 100]);
    assert.equal(semaphoreModule.defaultTimeoutOptions.retryInterval, 10);
    assert.ok((counts["redis-semaphore (retryInterval 10 ms)"] ?? 0) > 10);
    assert.ok((counts["redlock 5 (retryDelay 200 ± 100 ms)"] ?? 0) >= 3);
    // surelock: the holder's acquire, the waiter's two attempts, the release: no attempt while it waited.
    assert.ok((counts.surelock ?? 0) <= 5, String(counts.surelock));
    assert.ok(sl.some((a) => /^subscribe$/i.test(a[0] ?? "")));
  });

  it("replicas: none of the peers waits for replicas (no WAIT on the wire)", async () => {
    const seen = await onTheWire(redis, async () => {
      await (await new Redlock4([redis]).lock("w4", 5_000)).unlock();
      await (await new Redlock5([redis]).acquire(["w5"], 5_000)).release();
      const m = new Mutex(redis, "w-rs");
      await m.acquire();
      await m.release();
    });
    assert.ok(seen.length > 0);
    assert.equal(seen.filter((a) => /^wait$/i.test(a[0] ?? "")).length, 0);
  });

  it("quorum (Redlock) over 3 primaries with one down: redlock and redis-semaphore's Redlock* acquire on the other two", async () => {
    const nodes = await startPrimaries(3);
    const clients = nodes.map((n) => new Redis({ port: n.port, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null }));
    for (const c of clients) c.on("error", () => {});
    try {
      await Promise.all(clients.map((c) => ready(c)));
      await nodes[2]!.kill();
      const lock = await new Redlock5(clients, { retryCount: 0 }).acquire(["q"], 5_000);
      assert.equal(await clients[0]!.exists("q") + await clients[1]!.exists("q"), 2);
      await lock.release().catch(() => {}); // the dead node cannot confirm: a partial release
      const mutex = new RedlockMutex(clients, "q-rs", { acquireAttemptsLimit: 1 });
      assert.equal(await mutex.tryAcquire(), true);
      await mutex.release();
      const l4 = await new Redlock4(clients, { retryCount: 0 }).lock("q4", 5_000);
      assert.equal(await clients[0]!.exists("q4"), 1);
      await l4.unlock().catch(() => {});
    } finally {
      for (const c of clients) c.disconnect();
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });
});
