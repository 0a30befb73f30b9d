// inspectKey and forceRelease: what an operator's tool (and the CLI) reads and does, on a real
// redis-server, through the same keys as the locks.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Redis } from "ioredis";
import { ConnectionError, forceRelease, inspectKey, InvalidArgumentError, LockLostError, Surelock } from "../src/index.js";
import { MemoryRedis } from "../src/testing/index.js";
import { assertEveryKeyExpires, client, within } from "./helpers/fixtures.js";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";

describe("inspectKey and forceRelease", () => {
  let server: RedisServer;
  let redis: Redis;
  before(async () => {
    server = await startStandalone();
    redis = client(server);
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  it("a free key reads as nothing at all", async () => {
    assert.deepEqual(await inspectKey(redis, "admin-free"), { mutex: null, rw: null, semaphore: null, election: null, latch: null });
  });

  it("reads each kind of lock on a key, its holders, its queue, its election and its latch, under the Surelock's prefix", async () => {
    const locks = new Surelock({ redis, prefix: "ops", ttl: 10_000 });
    try {
      const key = "admin-all";
      const held = await locks.mutex(key).acquire({ owner: "worker-a" });
      const waiter = locks.mutex(key).acquire({ owner: "worker-b", timeout: 10_000 });
      const reader = await locks.readWriteLock(key).read().acquire();
      const permit = await locks.semaphore(key, { permits: 3 }).acquire({ permits: 2 });
      await locks.latch(key, { count: 4 }).countDown();
      await within(5_000, (async () => {
        while ((await inspectKey(redis, key, { prefix: "ops" })).mutex?.queue.length !== 1) await new Promise((r) => setTimeout(r, 10));
      })(), "the waiter's ticket");

      const state = await inspectKey(redis, key, { prefix: "ops" });
      assert.equal(state.mutex?.holder?.owner, "worker-a");
      assert.equal(state.mutex?.holder?.fencingToken, held.fencingToken.toString());
      assert.equal(state.mutex?.holder?.entries, 1);
      assert.ok(state.mutex!.holder!.pttlMs > 0 && state.mutex!.holder!.pttlMs <= 10_000);
      assert.deepEqual(state.mutex?.queue.map((w) => w.owner), ["worker-b"]);
      assert.deepEqual(state.rw?.holders.map((h) => [h.mode, h.fencingToken]), [["r", reader.fencingToken.toString()]]);
      assert.deepEqual(state.semaphore?.holders.map((h) => h.permits), [2]);
      assert.equal(state.semaphore?.limit, 3);
      assert.deepEqual(state.latch && { count: state.latch.count, left: state.latch.left }, { count: 4, left: 3 });
      assert.equal(state.election, null);
      // Another prefix is another namespace.
      assert.equal((await inspectKey(redis, key)).mutex, null);

      await held.release();
      await (await waiter).release();
      await reader.release();
      await permit.release();
    } finally {
      await locks.close();
    }
  });

  it("forceRelease ends the holds of one kind of lock, wakes its waiters, and the holder learns at its next renewal", async () => {
    const locks = new Surelock({ redis, ttl: 1_500 });
    try {
      const key = "admin-force";
      const stuck = await locks.mutex(key).acquire({ owner: "stuck" });
      const next = locks.mutex(key).acquire({ owner: "next", timeout: 10_000 });
      const reader = await locks.readWriteLock(key).read().acquire({ owner: "reader" });

      assert.deepEqual(await forceRelease(redis, key, { kind: "semaphore" }), [], "a kind that is not held: nothing ended");
      const ended = await forceRelease(redis, key);
      assert.deepEqual(ended.map((h) => [h.owner, h.fencingToken, h.entries]), [["stuck", stuck.fencingToken.toString(), 1]]);
      const woken = await within(5_000, next, "the waiter the forced release woke");
      assert.ok(woken.fencingToken > stuck.fencingToken);
      const reason = await within(5_000, new Promise<unknown>((resolve) => {
        if (stuck.signal.aborted) resolve(stuck.signal.reason);
        stuck.signal.addEventListener("abort", () => resolve(stuck.signal.reason), { once: true });
      }), "the old holder's loss");
      assert.ok(reason instanceof LockLostError);
      assert.equal((await inspectKey(redis, key)).rw?.holders.length, 1, "the read-write lock of the key was not touched");

      const readers = await forceRelease(redis, key, { kind: "rw" });
      assert.deepEqual(readers.map((h) => [h.mode, h.owner, h.fencingToken]), [["r", "reader", reader.fencingToken.toString()]]);
      await woken.release();
      await assertEveryKeyExpires(server);
    } finally {
      await locks.close();
    }
  });

  it("works with any client Surelock takes (the in-memory double here)", async () => {
    const memory = new MemoryRedis();
    const locks = new Surelock({ redis: memory });
    try {
      const lease = await locks.mutex("admin-memory").acquire({ owner: "m" });
      assert.equal((await inspectKey(memory, "admin-memory")).mutex?.holder?.owner, "m");
      assert.equal((await forceRelease(memory, "admin-memory")).length, 1);
      assert.equal((await inspectKey(memory, "admin-memory")).mutex, null);
      await lease.release().catch(() => undefined);
    } finally {
      await locks.close();
    }
  });

  it("bad input is refused before any I/O, naming the argument and the value", async () => {
    const refused = async (call: () => Promise<unknown>, argument: string): Promise<void> => {
      await assert.rejects(call, (e: unknown) => e instanceof InvalidArgumentError && e.message.includes(argument), argument);
    };
    await refused(() => inspectKey({} as never, "k"), "redis");
    await refused(() => inspectKey(redis, ""), "key");
    await refused(() => inspectKey(redis, "k", { prefix: "a{b}" }), "options.prefix");
    await refused(() => inspectKey(redis, "k", { commandTimeout: 0 }), "options.commandTimeout");
    await refused(() => inspectKey(redis, "k", { kind: "mutex" } as never), "options");
    await refused(() => forceRelease(redis, "k", { kind: "lock" as never }), "options.kind");
    await refused(() => forceRelease(null as never, "k"), "redis");
  });

  it("a server that does not answer: ConnectionError within the command timeout", async () => {
    const dead = await startStandalone();
    const c = client(dead, { maxRetriesPerRequest: 0 });
    try {
      await within(5_000, c.ping(), "the connection");
      await dead.pause();
      const started = performance.now();
      await assert.rejects(inspectKey(c, "k", { commandTimeout: 300 }), ConnectionError);
      assert.ok(performance.now() - started < 5_000, "bounded by the command timeout, not hung");
    } finally {
      await dead.resume();
      c.disconnect();
      await dead.stop();
    }
  });
});
