import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ConnectionError, LockLostError, LockNotHeldError } from "../../src/index.js";
import { assertEveryKeyExpires, commandCalls, Harness, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { runFixture } from "../fixtures/processes.js";

describe("mutex under failure", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertEveryKeyExpires(server); await server.command("FLUSHALL"); });
  after(() => server.stop());

  it("a holder killed with SIGKILL: the next waiter gets the lock after the TTL, not before", async () => {
    const holder = runFixture("holder", [server.port, "killed", 800]);
    await new Promise<void>((resolve) => holder.lines((l) => { if (l.startsWith("held")) resolve(); }));
    const locks = h.locks();
    // The key expires no earlier than `pttl` after this instant (the server read PTTL later still).
    const askedAt = performance.now();
    const pttl = Number(await server.command("PTTL", "surelock:{killed}:lock"));
    holder.child.kill("SIGKILL");
    await holder.done;
    const lease = await within(5_000, locks.mutex("killed").acquire());
    const waited = performance.now() - askedAt;
    // PTTL rounds to the millisecond: 1 ms of slack, whatever the machine's load.
    assert.ok(waited >= pttl - 1, `acquired ${waited.toFixed(1)} ms after PTTL was asked, which then said ${pttl} ms`);
    await lease.release();
  });

  it("a lease whose lock expired and was taken cannot release or extend it; the new holder's lock stays untouched", async () => {
    const a = h.locks({ ttl: 10_000 });
    const b = h.locks({ ttl: 10_000 });
    const stale = await a.mutex("k").acquire();
    await server.command("DEL", "surelock:{k}:lock"); // its TTL ran out (without waiting for it)
    const fresh = await b.mutex("k").acquire();
    const before = await server.command("HGETALL", "surelock:{k}:lock");
    const pttlBefore = Number(await server.command("PTTL", "surelock:{k}:lock"));

    await assert.rejects(stale.extend(), (e: unknown) => e instanceof LockLostError && e.code === "ERR_SURELOCK_LOCK_LOST" && e.reason === "taken");
    await assert.rejects(stale.release(), (e: unknown) => e instanceof LockLostError);
    assert.equal(stale.signal.aborted, true);
    assert.equal(stale.held, false);

    assert.deepEqual(await server.command("HGETALL", "surelock:{k}:lock"), before, "owner, count and token unchanged");
    assert.ok(Number(await server.command("PTTL", "surelock:{k}:lock")) <= pttlBefore, "TTL not extended by the stale holder");
    assert.equal(await fresh.isHeld(), true);
    await fresh.release();
  });

  it("release of a lost lease rejects with LockLostError once; a second release is a no-op", async () => {
    const locks = h.locks();
    const lease = await locks.mutex("lost").acquire();
    await server.command("DEL", "surelock:{lost}:lock");
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
    await lease.release();
  });

  it("extend after release throws LockNotHeldError; release twice is a no-op", async () => {
    const locks = h.locks();
    const lease = await locks.mutex("twice").acquire();
    await lease.release();
    await lease.release();
    await assert.rejects(lease.extend(), (e: unknown) => e instanceof LockNotHeldError && e.code === "ERR_SURELOCK_NOT_HELD");
    assert.equal(await lease.isHeld(), false);
  });

  it("no lock is left without a TTL when connections drop in the middle of acquires", async () => {
    const proxy = await startFaultProxy(server);
    h.onCleanup(() => proxy.close());
    const locks = h.locks({ commandTimeout: 300 }, proxy);
    const attempts = Array.from({ length: 200 }, (_, i) => locks.mutex(`drop:${i % 20}`).tryAcquire().then((l) => l?.release()).catch(() => {}));
    setImmediate(() => proxy.resetAll());
    await Promise.all(attempts);
    await assertEveryKeyExpires(server);
  });

  it("SCRIPT FLUSH during a run: operations go on (EVALSHA falls back to EVAL once)", async () => {
    const locks = h.locks();
    const evalsBefore = await commandCalls(server, "eval");
    let flushes = 0;
    const workers = Array.from({ length: 5 }, async (_, w) => {
      for (let i = 0; i < 40; i++) {
        await locks.withLock(`flush:${w}`, async () => {});
        if (w === 0 && i % 10 === 5) { await server.command("SCRIPT", "FLUSH"); flushes++; }
      }
    });
    await Promise.all(workers);
    assert.equal(flushes, 4);
    assert.ok((await commandCalls(server, "eval")) > evalsBefore, "the fallback loaded the scripts again");
  });

  it("Redis unreachable: acquire rejects with ConnectionError within the command timeout, not a hang", async () => {
    const proxy = await startFaultProxy(server);
    h.onCleanup(() => proxy.close());
    const locks = h.locks({ commandTimeout: 500 }, proxy);
    await (await locks.mutex("warm").acquire()).release();
    proxy.blackhole();
    const error = await within(3_000, locks.mutex("down").acquire().then(() => null, (e: unknown) => e));
    assert.ok(error instanceof ConnectionError, String(error));
    assert.equal((error as ConnectionError).code, "ERR_SURELOCK_CONNECTION");
    proxy.heal("drop");
  });

  it("Redis not listening at all: tryAcquire rejects with ConnectionError in bounded time", async () => {
    const dead = await startStandalone();
    const port = dead.port;
    await dead.stop();
    const locks = h.locks({ commandTimeout: 500 }, { host: "127.0.0.1", port });
    await within(3_000, assert.rejects(locks.mutex("x").tryAcquire(), { code: "ERR_SURELOCK_CONNECTION" }));
  });
});
