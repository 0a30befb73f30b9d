import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, afterEach, before, describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { LockLostError, type ExtendMessage } from "../../src/index.js";
import { KEEPALIVE_CHUNK } from "../../src/store/keepalive-batch.js";
import { aborted, assertEveryKeyExpires, commandCalls, commandUsec, eventually, Harness, quietFor, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";

describe("watchdog renewal", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertEveryKeyExpires(server); await server.command("FLUSHALL"); });
  after(() => server.stop());

  it("a critical section running 5 x ttl keeps the lock throughout; it is free right after release", async () => {
    const ttl = 300;
    const holder = h.locks({ ttl });
    const other = h.locks({ ttl });
    const lease = await holder.mutex("long").acquire();
    const endAt = performance.now() + 5 * ttl;
    let tries = 0;
    while (performance.now() < endAt) {
      assert.equal(await other.mutex("long").tryAcquire(), null, "another owner never gets in while it is held");
      tries++;
      await quietFor(25);
    }
    assert.ok(tries > 20);
    assert.equal(lease.held, true);
    assert.equal(lease.signal.aborted, false);
    await lease.release();
    const next = await other.mutex("long").tryAcquire();
    assert.ok(next, "free within one round trip of the release");
    await next.release();
  });

  it("renews 10,000 held leases once per tick, in chunks of at most KEEPALIVE_CHUNK (100) per script call sent together", { timeout: 120_000 }, async () => {
    const ttl = 3_000;
    const locks = h.locks({ ttl });
    const leases = [];
    for (let i = 0; i < 10_000; i += 500) {
      leases.push(...(await Promise.all(Array.from({ length: 500 }, (_, j) => locks.mutex(`many:${i + j}`).acquire()))));
    }
    // A tick publishes its extend events synchronously, one per renewed lease, so the events
    // of one batch are those before the next microtask.
    const batches: number[] = [];
    let open = 0;
    const onExtend = (m: unknown): void => {
      if (!(m as ExtendMessage).automatic) return;
      if (open++ === 0) queueMicrotask(() => { batches.push(open); open = 0; });
    };
    diagnostics.subscribe("surelock:extend", onExtend);
    try {
      // Leases taken over a few hundred ms fall into step within one renewal round.
      await eventually(() => batches.at(-1) === 10_000, 4 * ttl, "a tick renewing all 10,000 leases");
      await server.command("CONFIG", "RESETSTAT");
      const seen = batches.length;
      await eventually(() => batches.length >= seen + 3, 4 * ttl, "three more renewal ticks");
      const measured = batches.slice(seen, seen + 3);
      const calls = await commandCalls(server, "evalsha");
      const usec = await commandUsec(server, "evalsha");
      console.log(`# 10,000 leases: ${calls} EVALSHA for ticks renewing ${measured.join(", ")} leases, ${usec.toFixed(0)} µs of Redis per call`);
      assert.deepEqual(measured, [10_000, 10_000, 10_000], "every tick renews every lease");
      // Calls of KEEPALIVE_CHUNK items per tick, sent at once: Redis serves other clients between
      // them. A fourth tick may have been sent, and not yet answered, when the third one was counted.
      const perTick = Math.ceil(10_000 / KEEPALIVE_CHUNK);
      assert.ok(calls === 3 * perTick || calls === 4 * perTick, `${calls} EVALSHA for three ticks (${perTick} a tick)`);
    } finally {
      diagnostics.unsubscribe("surelock:extend", onExtend);
    }
    for (const lease of leases) await lease.release();
  });

  it("memory stays flat over 100,000 acquire/release cycles", { timeout: 180_000 }, async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const locks = h.locks();
    const cycles = async (n: number): Promise<void> => {
      await Promise.all(Array.from({ length: 25 }, async (_, w) => {
        for (let i = 0; i < n / 25; i++) await (await locks.mutex(`mem:${w}`).acquire()).release();
      }));
    };
    await cycles(10_000);
    gc();
    const baseline = process.memoryUsage().heapUsed;
    await cycles(100_000);
    gc();
    const grown = process.memoryUsage().heapUsed - baseline;
    console.log(`# heap after 100,000 acquire/release cycles: ${(grown / 1024 / 1024).toFixed(2)} MiB above the baseline`);
    assert.ok(grown < 4 * 1024 * 1024, `heap grew by ${(grown / 1024 / 1024).toFixed(2)} MiB`);
  });

  it("a process whose leases are all released exits on its own", async () => {
    const run = runFixture("exits-on-its-own", [server.port]);
    const result = await within(15_000, run.done, "the process exiting");
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), "done");
  });

  it("stops renewing a lease the moment it is released", async () => {
    const ttl = 300;
    const locks = h.locks({ ttl });
    const lease = await locks.mutex("stop").acquire();
    await lease.release();
    await server.command("CONFIG", "RESETSTAT");
    await quietFor(ttl); // three renewal intervals
    assert.equal(await commandCalls(server, "evalsha"), 0);
  });

  it("extend(ttl) renews now and the watchdog keeps the new length", async () => {
    const locks = h.locks({ ttl: 500 });
    const lease = await locks.mutex("ext").acquire();
    await lease.extend(20_000);
    assert.ok(Number(await server.command("PTTL", "surelock:{ext}:lock")) > 15_000);
    await lease.release();
    await assert.rejects(lease.extend(), { code: "ERR_SURELOCK_NOT_HELD" });
  });

  it("lease.extend() after the lease was lost throws LockLostError", async () => {
    const locks = h.locks({ ttl: 300 });
    const lease = await locks.mutex("gone").acquire();
    await server.command("DEL", "surelock:{gone}:lock");
    const reason = await aborted(lease.signal, 2_000);
    assert.ok(reason instanceof LockLostError && reason.reason === "expired");
    await assert.rejects(lease.extend(), (e: unknown) => e instanceof LockLostError);
    await assert.rejects(lease.release(), (e: unknown) => e instanceof LockLostError);
  });
});
