/**
 * A command that ran on Redis and whose reply was lost with its connection. With ioredis
 * `autoResendUnfulfilledCommands: false` ioredis drops it without ever settling its promise: the
 * adapter settles it when the connection closes, so the acquire settles at once (whatever its
 * timeout) and gives back what it may have been granted (hold or ticket). With the default
 * (resend), the replayed script answers what the first run did. A reply that never comes at all
 * is bounded by the command timeout.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ConnectionError, Surelock } from "../../src/index.js";
import { scripts } from "../../src/protocol/index.js";
import { MemoryRedis } from "../../src/testing/index.js";
import { Harness, startsWaiting } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { assertNoTrace, inspectable, rejection, settles } from "./support.js";

describe("lost replies (ioredis through a proxy that loses the reply with the connection)", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let h: Harness;
  before(async () => { server = await startStandalone(); proxy = await startFaultProxy(server); h = new Harness(server); });
  afterEach(async () => {
    proxy.heal("drop");
    await h.cleanup();
    await assertNoTrace(server);
    await server.command("FLUSHALL");
  });
  after(async () => { await proxy.close(); await server.stop(); });

  async function warm(resend: boolean): Promise<Surelock> {
    const redis = h.client({ autoResendUnfulfilledCommands: resend }, proxy);
    const locks = h.locks({ redis });
    await (await locks.mutex("warm-up").acquire()).release();
    return locks;
  }

  it("no resend, a free lock: the acquire settles at once with ConnectionError, and the hold it founded is given back", async () => {
    const locks = await warm(false);
    const lost = proxy.cutReply({ text: "{lost-free}" });
    const pending = settles(locks.mutex("lost-free").acquire(), 3_000);
    await lost;
    const s = await pending;
    assert.ok(rejection(s) instanceof ConnectionError, String(rejection(s)));
    await assertNoTrace(server);
    assert.equal(await server.command("HEXISTS", "surelock:{lost-free}:lock", "c"), 1, "the attempt did found a hold");
    const next = await h.locks().mutex("lost-free").tryAcquire();
    assert.ok(next, "free for the next caller at once, not after the lease");
    await next.release();
  });

  it("no resend, a held lock: the queued attempt rejects, and its ticket does not hold the freed lock back", async () => {
    const holder = await h.locks().mutex("lost-queued").acquire();
    const locks = await warm(false);
    const lost = proxy.cutReply({ text: "{lost-queued}" });
    const pending = settles(locks.mutex("lost-queued").acquire({ timeout: 60_000 }), 3_000);
    await lost;
    assert.ok(rejection(await pending) instanceof ConnectionError);
    // Another waiter queues, then the holder leaves: the lock goes to it, not to the dead ticket.
    const other = h.locks({ pollInterval: 60_000 });
    const waits = startsWaiting("lost-queued");
    const next = settles(other.mutex("lost-queued").acquire({ timeout: 10_000 }), 10_000);
    await waits;
    const freedAt = performance.now();
    await holder.release();
    const s = await next;
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.ok(performance.now() - freedAt < 1_000, `served ${(performance.now() - freedAt).toFixed(0)} ms after the release`);
    await s.value.release();
  });

  it("with resend (the default): the replayed acquire answers the first run's hold; one entry, one token", async () => {
    const locks = await warm(true);
    const lost = proxy.cutReply({ text: "{lost-resent}" });
    const pending = settles(locks.mutex("lost-resent").acquire(), 5_000);
    await lost;
    const s = await pending;
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    // One entry (a hold of one writes no count), one token (the counter's, no `t` of its own).
    const [n, t, c] = (await server.command("HMGET", "surelock:{lost-resent}:lock", "n", "t", "c")) as (string | null)[];
    assert.equal(n ?? "1", "1");
    assert.equal(BigInt(String(t ?? c)), s.value.fencingToken);
    await s.value.release();
  });

  it("no resend, a release whose reply is lost: release() settles at once; the lock is free", async () => {
    const locks = await warm(false);
    const lease = await locks.mutex("lost-release").acquire();
    const lost = proxy.cutReply({ text: "{lost-release}" });
    const pending = settles(lease.release(), 3_000);
    await lost;
    const s = await pending;
    assert.ok(s.atMs < 1_000, `settled after ${s.atMs.toFixed(0)} ms`);
    await assertNoTrace(server);
  });
});

describe("a reply that never comes (MemoryRedis drop-reply hang)", () => {
  it("the acquire settles at the command timeout with ConnectionError; the hold it founded is given back", async () => {
    const redis = new MemoryRedis();
    // The warm-up (scripts loaded, first calls made) is not what this test bounds: it runs under the
    // default command timeout, on another connection to the same server.
    const warm = new Surelock({ redis: redis.duplicate() });
    await (await warm.mutex("warm-up").acquire()).release();
    await warm.close();
    const locks = new Surelock({ redis, commandTimeout: 200 });
    let armed = true;
    redis.intercept((call) => {
      if (!armed || call.sha !== scripts.acquire.sha) return undefined;
      armed = false;
      return { kind: "drop-reply", then: "hang" };
    });
    // Timed from before the call: its deadline is set inside it, before settles() would start counting.
    const started = performance.now();
    const s = await settles(locks.mutex("hang").acquire(), 2_000, started);
    assert.ok(rejection(s) instanceof ConnectionError);
    assert.ok(s.atMs >= 199 && s.atMs < 600, `settled after ${s.atMs.toFixed(0)} ms`);
    await assertNoTrace(inspectable(redis.duplicate()));
    await locks.close();
  });
});
