/**
 * surelock on its test double under jest, with jest's default fake timers on for the whole file
 * (the runner's config sets fakeTimers.enableGlobally, and each test calls useFakeTimers too), as a
 * CommonJS user writes it. Run by test/runners/runners.test.ts.
 */
const { Surelock, LockLostError } = require("surelock");
const { MemoryRedis } = require("surelock/testing");

beforeEach(() => {
  jest.useFakeTimers();
});

test("a lock is taken and released, and a second process is kept out meanwhile", async () => {
  const redis = new MemoryRedis();
  const a = new Surelock({ redis });
  const b = new Surelock({ redis: redis.duplicate() });
  const lease = await a.mutex("orders").acquire();
  expect(lease.fencingToken > 0n).toBe(true);
  expect(await b.mutex("orders").tryAcquire()).toBeNull();
  await lease.release();
  const next = await b.mutex("orders").acquire();
  expect(next.fencingToken > lease.fencingToken).toBe(true);
  await next.release();
  await Promise.all([a.close(), b.close()]);
});

test("a waiter is handed the lock by the release, with no timer moved", async () => {
  const redis = new MemoryRedis();
  const a = new Surelock({ redis });
  const b = new Surelock({ redis: redis.duplicate() });
  const first = await a.mutex("stock").acquire();
  const waiting = b.mutex("stock").acquire({ timeout: 60_000 });
  await first.release();
  const second = await waiting;
  expect(second.held).toBe(true);
  await second.release();
  await Promise.all([a.close(), b.close()]);
});

test("withLock, a semaphore and a write lock on one ioredis-shaped client the app uses for its data too", async () => {
  const redis = new MemoryRedis();
  const locks = new Surelock({ redis });
  await redis.set("units", 3);
  const left = await locks.withLock("units", async () => redis.decrby("units", 1));
  expect(left).toBe(2);
  const permit = await locks.semaphore("pool", { permits: 2 }).acquire();
  const writer = await locks.readWriteLock("doc").write().acquire();
  await Promise.all([permit.release(), writer.release()]);
  expect(await redis.get("units")).toBe("2");
  await locks.close();
});

test("errors keep their classes across surelock and surelock/testing", async () => {
  const redis = new MemoryRedis();
  const locks = new Surelock({ redis });
  const lease = await locks.mutex("gone").acquire();
  await redis.del("surelock:{gone}:lock");
  await expect(lease.release()).rejects.toBeInstanceOf(LockLostError);
  await locks.close();
});
