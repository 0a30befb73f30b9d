/**
 * `timeout` bounds the whole acquire, its first attempt included: a slow reply or a partition ends
 * in LockTimeoutError at the timeout, not in a ConnectionError at the command timeout; a hold
 * that the late reply founded is given back. `timeout: 0` is one attempt, bounded by the command
 * timeout.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ConnectionError, LockTimeoutError, type Surelock } from "../../src/index.js";
import { Harness } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { assertNoTrace, rejection, settles } from "./support.js";

describe("timeout bounds the whole acquire", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let h: Harness;
  before(async () => { server = await startStandalone(); proxy = await startFaultProxy(server); h = new Harness(server); });
  afterEach(async () => {
    proxy.setLatency(0, 0);
    // A partition swallowed whole commands: their connections are out of step, start them afresh.
    if (proxy.blackholed) proxy.heal("reset");
    await h.cleanup();
    await assertNoTrace(server);
    await server.command("FLUSHALL");
  });
  after(async () => { await proxy.close(); await server.stop(); });

  async function warm(options: Parameters<Harness["locks"]>[0] = {}): Promise<Surelock> {
    const locks = h.locks(options, proxy);
    await (await locks.mutex("warm-up").acquire()).release();
    return locks;
  }

  it("a free lock whose reply is slow: LockTimeoutError at the timeout; the hold founded late is given back", async () => {
    const locks = await warm();
    proxy.setLatency(0, 800);
    const started = performance.now();
    const s = await settles(locks.mutex("slow-free").acquire({ timeout: 200 }), 2_000, started);
    const error = rejection(s);
    assert.ok(error instanceof LockTimeoutError, String(error));
    assert.equal(error.timeoutMs, 200);
    assert.ok(s.atMs >= 199 && s.atMs < 450, `settled after ${s.atMs.toFixed(0)} ms`);
    await assertNoTrace(server);
    assert.equal(await server.command("HEXISTS", "surelock:{slow-free}:lock", "c"), 1, "the attempt did found a hold");
  });

  it("a held lock whose first reply is slow: LockTimeoutError at the timeout; the ticket queued late leaves the line", async () => {
    const holder = await h.locks().mutex("slow-held").acquire();
    const locks = await warm();
    proxy.setLatency(0, 800);
    const s = await settles(locks.mutex("slow-held").acquire({ timeout: 150 }), 2_000);
    assert.ok(rejection(s) instanceof LockTimeoutError);
    assert.ok(s.atMs < 400, `settled after ${s.atMs.toFixed(0)} ms`);
    await holder.release();
    await assertNoTrace(server);
  });

  it("a partition (blackhole): LockTimeoutError at the timeout, not ConnectionError at the 5 s command timeout", async () => {
    const locks = await warm();
    proxy.blackhole();
    const started = performance.now();
    const s = await settles(locks.mutex("cut-off").acquire({ timeout: 300 }), 3_000, started);
    const error = rejection(s);
    assert.ok(error instanceof LockTimeoutError, String(error));
    assert.ok(s.atMs >= 299 && s.atMs < 600, `settled after ${s.atMs.toFixed(0)} ms`);
  });

  it("timeout 0 in a partition: one attempt, ConnectionError at the command timeout", async () => {
    const locks = await warm({ commandTimeout: 300 });
    proxy.blackhole();
    const started = performance.now();
    const s = await settles(locks.mutex("cut-off-once").acquire({ timeout: 0 }), 3_000, started);
    const error = rejection(s);
    assert.ok(error instanceof ConnectionError, String(error));
    assert.ok(s.atMs >= 299 && s.atMs < 800, `settled after ${s.atMs.toFixed(0)} ms`);
    const t = await settles(locks.mutex("cut-off-once").tryAcquire(), 3_000);
    assert.ok(rejection(t) instanceof ConnectionError);
  });

  it("withLock's timeout bounds its acquire the same way, and work never runs", async () => {
    const locks = await warm();
    proxy.setLatency(0, 800);
    let ran = false;
    const s = await settles(locks.withLock("slow-with", () => { ran = true; }, { timeout: 100 }), 2_000);
    assert.ok(rejection(s) instanceof LockTimeoutError);
    assert.ok(s.atMs < 350, `settled after ${s.atMs.toFixed(0)} ms`);
    assert.equal(ran, false);
    await assertNoTrace(server);
  });
});
