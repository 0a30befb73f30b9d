/**
 * `release()` settles no later than the lease's validity: in a partition it rejects with
 * ConnectionError when the validity runs out (not after the command timeout), and the lease's
 * signal has aborted by then; with a reachable Redis it resolves; the lock then expires by itself.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ConnectionError, LockLostError } from "../../src/index.js";
import { aborted, Harness } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { assertNoTrace, rejection, settles } from "./support.js";

describe("release() settles within the lease's validity", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let h: Harness;
  before(async () => { server = await startStandalone(); proxy = await startFaultProxy(server); h = new Harness(server); });
  afterEach(async () => {
    proxy.setLatency(0, 0);
    if (proxy.blackholed) proxy.heal("reset");
    await h.cleanup();
    await server.command("FLUSHALL");
  });
  after(async () => { await proxy.close(); await server.stop(); });

  it("in a partition: rejects with ConnectionError by the end of the validity, not the 5 s command timeout; signal aborts", async () => {
    const ttl = 600;
    const locks = h.locks({ ttl }, proxy);
    const sentAt = performance.now();
    const lease = await locks.mutex("cut").acquire();
    proxy.blackhole();
    const s = await settles(lease.release(), 3_000, sentAt);
    const error = rejection(s);
    assert.ok(error instanceof ConnectionError, String(error));
    // The validity ends at ttl − drift after the send; a timer may fire late on a busy machine.
    assert.ok(s.atMs <= ttl + 150, `settled ${s.atMs.toFixed(0)} ms after the acquire was sent; ttl ${ttl} ms`);
    assert.equal(lease.held, false);
    assert.equal(lease.signal.aborted, true, "lease.signal aborted when the validity ran out");
    assert.ok(lease.signal.reason instanceof LockLostError, String(lease.signal.reason));
    // The lock expires by itself in Redis: nothing of it outlives its ttl.
    proxy.heal("reset");
    await assertNoTrace(server, "surelock", ttl + 500);
  });

  it("in a partition: lease.signal aborts while release() is pending, no later than it settles", async () => {
    const ttl = 600;
    const locks = h.locks({ ttl }, proxy);
    const lease = await locks.mutex("cut-signal").acquire();
    proxy.blackhole();
    const releasing = settles(lease.release(), 3_000);
    const reason = await aborted(lease.signal, ttl + 200);
    assert.ok(reason instanceof LockLostError, String(reason));
    assert.equal((reason as LockLostError).reason, "unreachable");
    rejection(await releasing);
  });

  it("a slow but reachable Redis: release resolves and the lock is free", async () => {
    const locks = h.locks({ ttl: 2_000 }, proxy);
    const lease = await locks.mutex("slow").acquire();
    proxy.setLatency(0, 200);
    const s = await settles(lease.release(), 3_000);
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.equal(lease.signal.aborted, false, "a released lease is not lost");
    await assertNoTrace(server);
  });

  it("withLock whose release cannot get through settles within the validity and keeps work's value", async () => {
    const ttl = 600;
    const locks = h.locks({ ttl }, proxy);
    const started = performance.now();
    const s = await settles(locks.withLock("cut-with", () => {
      proxy.blackhole();
      return 42;
    }), 3_000, started);
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.equal(s.value, 42);
    assert.ok(s.atMs <= ttl + 150, `settled after ${s.atMs.toFixed(0)} ms`);
  });
});
