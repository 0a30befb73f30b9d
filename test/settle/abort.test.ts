/**
 * An abort settles an acquire at once with the signal's reason, whatever is on the wire; what the
 * interrupted attempt obtained anyway (a hold founded for it, a ticket in line) is given back.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Surelock } from "../../src/index.js";
import { scripts } from "../../src/protocol/index.js";
import { Gate, MemoryRedis } from "../../src/testing/index.js";
import { Harness, startsWaiting } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { assertNoListeners, assertNoResourcesLeft, assertNoTrace, inspectable, rejection, resources, settles } from "./support.js";

describe("abort racing an acquire (real Redis through a proxy)", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let h: Harness;
  before(async () => { server = await startStandalone(); proxy = await startFaultProxy(server); h = new Harness(server); });
  afterEach(async () => {
    proxy.setLatency(0, 0);
    proxy.heal("drop");
    await h.cleanup();
    await assertNoTrace(server);
    await server.command("FLUSHALL");
  });
  after(async () => { await proxy.close(); await server.stop(); });

  /** A Surelock through the proxy whose first call (the version check) is behind it. */
  async function warm(options: Parameters<Harness["locks"]>[0] = {}): Promise<Surelock> {
    const locks = h.locks(options, proxy);
    await (await locks.mutex("warm-up").acquire()).release();
    return locks;
  }

  it("aborted in the same turn as acquire() on a free lock: rejects with signal.reason, nothing stays held", async () => {
    const locks = await warm();
    const c = new AbortController();
    const reason = new Error("changed my mind");
    const pending = locks.mutex("free-now").acquire({ signal: c.signal });
    c.abort(reason);
    assert.equal(rejection(await settles(pending, 1_000)), reason);
    assertNoListeners(c.signal);
    await assertNoTrace(server);
    // Free for the next caller now, not after the 30 s ttl of a hold nobody watches.
    const next = await h.locks().mutex("free-now").tryAcquire();
    assert.ok(next, "the lock is free");
    await next.release();
  });

  it("aborted while the acquire of a free lock is on the wire: rejects at once; the hold founded anyway is given back", async () => {
    const locks = await warm();
    proxy.setLatency(0, 300);
    const c = new AbortController();
    const reason = new Error("gave up");
    const onWire = proxy.seen("{free-slow}");
    const pending = locks.mutex("free-slow").acquire({ signal: c.signal });
    await onWire;
    c.abort(reason);
    const s = await settles(pending, 1_000);
    assert.equal(rejection(s), reason);
    assert.ok(s.atMs < 250, `settled ${s.atMs.toFixed(0)} ms after the abort, before the reply came`);
    // The script ran (the lock hash has a counter: a hold was founded) and the hold is gone again.
    await assertNoTrace(server);
    assert.equal(await server.command("HEXISTS", "surelock:{free-slow}:lock", "c"), 1, "the acquire did run on the server");
    const next = await h.locks().mutex("free-slow").tryAcquire();
    assert.ok(next, "the lock is free for the next caller");
    await next.release();
    assertNoListeners(c.signal);
  });

  it("aborted while the first attempt on a held lock is on the wire: rejects at once; its ticket leaves the line", async () => {
    const holder = await h.locks().mutex("held").acquire();
    const locks = await warm();
    proxy.setLatency(0, 1_000);
    const c = new AbortController();
    const reason = new Error("no longer needed");
    const onWire = proxy.seen("{held}");
    const pending = locks.mutex("held").acquire({ signal: c.signal });
    await onWire;
    c.abort(reason);
    const s = await settles(pending, 900);
    assert.equal(rejection(s), reason);
    assert.ok(s.atMs < 250, `settled ${s.atMs.toFixed(0)} ms after the abort`);
    await holder.release();
    await assertNoTrace(server);
    assertNoListeners(c.signal);
  });

  it("aborted while queued: rejects with the reason; no listener, timer or ticket is left", async () => {
    const holder = await h.locks().mutex("queued").acquire();
    const locks = await warm();
    const before = resources();
    const c = new AbortController();
    const waiting = startsWaiting("queued");
    const pending = locks.mutex("queued").acquire({ signal: c.signal, timeout: 60_000 });
    await waiting;
    c.abort("a plain string is a reason too");
    assert.equal(rejection(await settles(pending, 1_000)), "a plain string is a reason too");
    assertNoListeners(c.signal);
    await holder.release();
    await assertNoTrace(server);
    await locks.close();
    await assertNoResourcesLeft(before);
  });

  it("a signal that never aborts is let go once the acquire settles (acquired, timed out, refused)", async () => {
    const locks = await warm();
    const c = new AbortController();
    const lease = await locks.mutex("let-go").acquire({ signal: c.signal });
    assertNoListeners(c.signal);
    await assert.rejects(locks.mutex("let-go").acquire({ signal: c.signal, timeout: 50 }), { code: "ERR_SURELOCK_TIMEOUT" });
    assertNoListeners(c.signal);
    assert.equal(await locks.mutex("let-go").tryAcquire(), null);
    await lease.release();
    await locks.withLock("let-go", () => undefined, { signal: c.signal });
    assertNoListeners(c.signal);
  });
});

describe("abort racing an acquire (MemoryRedis: the exact windows)", () => {
  /** Gates the reply of the next call of `sha` on `redis`. */
  function gateNext(redis: MemoryRedis, sha: string, stage: "execution" | "reply"): Gate {
    const gate = new Gate();
    let armed = true;
    redis.intercept((call) => {
      if (!armed || call.sha !== sha) return undefined;
      armed = false;
      return { kind: "gate", gate, stage };
    });
    return gate;
  }

  it("aborted after the acquire ran and before its reply: rejects with the reason, the founded hold is given back", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    await (await locks.mutex("warm-up").acquire()).release();
    const gate = gateNext(redis, scripts.acquire.sha, "reply");
    const c = new AbortController();
    const reason = new Error("stop");
    const pending = locks.mutex("window").acquire({ signal: c.signal });
    await gate.reached;
    assert.equal(await redis.duplicate().command(["HGET", "surelock:{window}:lock", "o"]) !== null, true, "founded before the reply");
    c.abort(reason);
    assert.equal(rejection(await settles(pending, 1_000)), reason);
    gate.open();
    await assertNoTrace(inspectable(redis.duplicate()));
    assertNoListeners(c.signal);
    await locks.close();
  });

  it("a grant made to a waiter whose announcement is lost, crossing its abort: the granted hold is given back and handed on", async () => {
    const redis = new MemoryRedis();
    const holderSide = new Surelock({ redis: redis.duplicate() });
    const third = new Surelock({ redis: redis.duplicate() });
    const waiterRedis = redis.duplicate();
    const waiterSide = new Surelock({ redis: waiterRedis, pollInterval: 60_000 });
    const held = await holderSide.mutex("crossing").acquire();
    const c = new AbortController();
    const waits = startsWaiting("crossing");
    const aborting = waiterSide.mutex("crossing").acquire({ signal: c.signal });
    await waits;
    // A third caller queues behind the waiter: it must be served once the waiter is gone.
    const thirdWaits = startsWaiting("crossing");
    const behind = third.mutex("crossing").acquire({ timeout: 5_000 });
    await thirdWaits;
    waiterRedis.loseNextMessage();
    await held.release(); // grants the lock to the waiter's ticket; the announcement is lost
    assert.equal(await redis.command(["HGET", "surelock:{crossing}:lock", "h"]) !== null, true);
    c.abort(new Error("left"));
    await assert.rejects(aborting, /left/);
    const lease = await settles(behind, 2_000);
    assert.ok(lease.ok, "the caller behind got the lock the waiter gave back");
    await lease.value.release();
    await assertNoTrace(inspectable(redis.duplicate()));
    await Promise.all([holderSide.close(), waiterSide.close(), third.close()]);
  });
});
