import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, afterEach, before, describe, it } from "node:test";
import { LockLostError, type LostMessage } from "../../src/index.js";
import { aborted, assertEveryKeyExpires, Harness, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { runFixture } from "../fixtures/processes.js";

describe("a lost lease is announced on its signal", () => {
  let server: RedisServer;
  let h: Harness;
  const late: number[] = [];
  const onLost = (m: unknown): void => { late.push((m as LostMessage).lateByMs); };
  before(async () => { server = await startStandalone(); h = new Harness(server); diagnostics.subscribe("surelock:lost", onLost); });
  afterEach(async () => {
    if (server.paused) await server.resume();
    await h.cleanup();
    await assertEveryKeyExpires(server);
    await server.command("FLUSHALL");
  });
  after(async () => {
    diagnostics.unsubscribe("surelock:lost", onLost);
    if (late.length > 0) console.log(`# lost-lease abort delays after the lease became unsafe (ms): ${late.map((x) => x.toFixed(1)).join(", ")}`);
    await server.stop();
  });

  it("a holder paused with SIGSTOP past its TTL: another takes the lock, and the paused one's signal is aborted and its late write refused", async () => {
    const ttl = 500;
    const holder = runFixture("holder", [server.port, "paused", ttl, "stock"]);
    const lines: string[] = [];
    const seen = (prefix: string): Promise<string> => new Promise((resolve) => {
      const found = lines.find((l) => l.startsWith(prefix));
      if (found) resolve(found);
      holder.lines((l) => { lines.push(l); if (l.startsWith(prefix)) resolve(l); });
    });
    await seen("held");
    holder.child.kill("SIGSTOP");
    try {
      const locks = h.locks({ ttl: 10_000 });
      const lease = await within(3 * ttl + 2_000, locks.mutex("paused").acquire(), "the other acquire");
      const written = await locks.guard("stock").write(lease.fencingToken, "SET", "{stock}:data", "fresh");
      assert.equal(written.written, true);
      await new Promise((r) => setTimeout(r, 3 * ttl - 500 > 0 ? 3 * ttl - 500 : 0)); // keep it paused for 3 x ttl in all
      holder.child.kill("SIGCONT");
      const lost = await within(5_000, seen("lost"));
      assert.equal(lost, "lost expired");
      assert.equal(await within(5_000, seen("stale-write")), "stale-write false", "the guard refused the stale holder");
      assert.equal(await server.command("GET", "{stock}:data"), "fresh");
      assert.equal(await lease.isHeld(), true, "the new holder is untouched");
      await lease.release();
    } finally {
      holder.child.kill("SIGCONT");
      await holder.done;
    }
  });

  it("a paused holder with local waiters does not hold the queue back much longer than its lock's TTL", async () => {
    const ttl = 400;
    const holder = runFixture("holder", [server.port, "queued", ttl, "", 2]);
    await new Promise<void>((resolve) => holder.lines((l) => { if (l.startsWith("held")) resolve(); }));
    holder.child.kill("SIGSTOP");
    try {
      const pausedAt = performance.now();
      const locks = h.locks();
      const lease = await within(10_000, locks.mutex("queued").acquire());
      const waited = performance.now() - pausedAt;
      // Its line's ticket lapses with the lock (not after the 3 s cap): well under 2.5 s here.
      assert.ok(waited < 2_500, `the next process waited ${waited.toFixed(0)} ms`);
      await lease.release();
    } finally {
      holder.child.kill("SIGKILL");
      await holder.done;
    }
  });

  it("Redis frozen (SIGSTOP): the signal aborts before the key's TTL can run out on the server", async () => {
    const ttl = 1_000;
    const locks = h.locks({ ttl, commandTimeout: 5_000 });
    // Connected, and the server's version known: the next acquire is one script call, sent now.
    await (await locks.mutex("warm-up").acquire()).release();
    let unsafeAt = Infinity;
    const onLost = (m: unknown): void => {
      // When the lease became unsafe: the abort (which a busy event loop may run late) minus its lateness.
      if ((m as LostMessage).key === "frozen") unsafeAt = performance.now() - (m as LostMessage).lateByMs;
    };
    diagnostics.subscribe("surelock:lost", onLost);
    h.onCleanup(() => { diagnostics.unsubscribe("surelock:lost", onLost); });
    const sentBefore = performance.now();
    const lease = await locks.mutex("frozen").acquire();
    await server.pause();
    const reason = await aborted(lease.signal, 5_000);
    await server.resume();
    assert.ok(reason instanceof LockLostError);
    assert.equal(reason.reason, "unreachable");
    assert.ok(unsafeAt < sentBefore + ttl, `unsafe ${(unsafeAt - sentBefore).toFixed(0)} ms after the acquire was sent; ttl ${ttl}`);
    assert.equal(lease.held, false);
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });

  it("the connection blackholed by a proxy: the signal aborts before the key's TTL can run out", async () => {
    const ttl = 1_000;
    const proxy = await startFaultProxy(server);
    h.onCleanup(() => proxy.close());
    const locks = h.locks({ ttl, commandTimeout: 5_000 }, proxy);
    const sentBefore = performance.now();
    const lease = await locks.mutex("blackholed").acquire();
    let unsafeAt = Infinity;
    const onLost = (m: unknown): void => {
      // When the lease became unsafe: the abort (which a busy event loop may run late) minus its lateness.
      if ((m as LostMessage).key === "blackholed") unsafeAt = performance.now() - (m as LostMessage).lateByMs;
    };
    diagnostics.subscribe("surelock:lost", onLost);
    h.onCleanup(() => { diagnostics.unsubscribe("surelock:lost", onLost); });
    proxy.blackhole();
    const reason = await aborted(lease.signal, 5_000);
    assert.ok(unsafeAt < sentBefore + ttl, `unsafe ${(unsafeAt - sentBefore).toFixed(0)} ms after the acquire was sent; ttl ${ttl}`);
    assert.ok(reason instanceof LockLostError, String(reason));
    assert.equal(reason.reason, "unreachable");
    // The server still has the key for the rest of its TTL: nobody else got it early.
    assert.ok(Number(await server.command("PTTL", "surelock:{blackholed}:lock")) > 0);
    proxy.heal("drop");
  });

  it("withLock rejects with LockLostError when the lease was lost while the work ran, even though the work resolved", async () => {
    const locks = h.locks({ ttl: 300 });
    const result = locks.withLock("work", async (lease) => {
      await server.command("DEL", "surelock:{work}:lock");
      await aborted(lease.signal, 2_000);
      return "done";
    });
    await assert.rejects(result, (e: unknown) => e instanceof LockLostError && e.reason === "expired");
  });

  it("withLock: when the work throws, its own error wins over the loss", async () => {
    const locks = h.locks({ ttl: 300 });
    const boom = new Error("boom");
    await assert.rejects(locks.withLock("throws", async (lease) => {
      await server.command("DEL", "surelock:{throws}:lock");
      await aborted(lease.signal, 2_000);
      throw boom;
    }), (e: unknown) => e === boom);
  });

  it("Redis restarted without persistence while a lease is held: the holder learns of it at the next renewal", async () => {
    const ttl = 600;
    const locks = h.locks({ ttl });
    const lease = await locks.mutex("restart").acquire();
    await server.restart();
    const reason = await aborted(lease.signal, 5_000);
    assert.ok(reason instanceof LockLostError);
    assert.ok(reason.reason === "expired" || reason.reason === "unreachable", reason.reason);
  });

  it("isHeld() that finds the lock taken aborts the signal with reason 'taken'", async () => {
    const locks = h.locks({ ttl: 10_000 });
    const lease = await locks.mutex("taken").acquire();
    await server.command("HSET", "surelock:{taken}:lock", "h", "another-hold", "o", "someone-else");
    assert.equal(await lease.isHeld(), false);
    const reason = await aborted(lease.signal, 100);
    assert.ok(reason instanceof LockLostError && reason.reason === "taken");
  });
});
