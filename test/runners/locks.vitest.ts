import { beforeEach, expect, test, vi } from "vitest";
import { Surelock } from "surelock";
import { MemoryRedis } from "surelock/testing";

beforeEach(() => {
  vi.useFakeTimers();                              // vitest's defaults: setTimeout, setImmediate, Date, ...
});

test("one client for the app's data and its locks: the last unit is sold once", async () => {
  const redis = new MemoryRedis();                 // where the app would pass its ioredis client
  const locks = new Surelock({ redis });
  await redis.set("stock:42", 1);
  const sell = () => locks.withLock("stock:42", async () => {
    const left = Number(await redis.get("stock:42"));
    if (left <= 0) throw new Error("sold out");
    await redis.set("stock:42", left - 1);
  });
  const results = await Promise.allSettled([sell(), sell()]);
  expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
  await locks.close();
});

test("a waiter is handed the lock by the release, timers faked", async () => {
  const redis = new MemoryRedis();
  const a = new Surelock({ redis });
  const b = new Surelock({ redis: redis.duplicate() });   // another process
  const first = await a.mutex("report").acquire();
  const waiting = b.mutex("report").acquire({ timeout: 60_000 });
  await first.release();
  const second = await waiting;
  expect(second.fencingToken > first.fencingToken).toBe(true);
  await second.release();
  await Promise.all([a.close(), b.close()]);
});
