/**
 * close(): every pending acquire rejects with ClosedError (an attempt on the wire included: no
 * lease is handed out after close), and close() itself settles within a bounded time whatever
 * the network does to the wake-up connection — blackholed (ioredis QUIT never answered) or never
 * opened (node-redis connect never completes) — and leaves no connection behind.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { createClient } from "redis";
import diagnostics from "node:diagnostics_channel";
import { ClosedError, LockLostError, Surelock } from "../../src/index.js";
import { eventually, Harness, quietFor, startsWaiting } from "../helpers/fixtures.js";
import { startSentinelSet, startStandalone, type RedisServer, type SentinelSet } from "../helpers/redis-topology.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { assertNoTrace, rejection, settles } from "./support.js";

describe("close() settles, and settles every pending call", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let h: Harness;
  before(async () => { server = await startStandalone(); proxy = await startFaultProxy(server); h = new Harness(server); });
  afterEach(async () => {
    proxy.setLatency(0, 0);
    proxy.silenceNew(false);
    proxy.heal("reset");
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

  it("an acquire whose first attempt is on the wire rejects with ClosedError; the hold founded anyway is given back", async () => {
    const locks = await warm();
    proxy.setLatency(0, 400);
    const onWire = proxy.seen("{in-flight}");
    const pending = locks.mutex("in-flight").acquire();
    await onWire;
    const closing = locks.close();
    const s = await settles(pending, 1_000);
    const error = rejection(s);
    assert.ok(error instanceof ClosedError, String(error));
    assert.ok(s.atMs < 300, `rejected ${s.atMs.toFixed(0)} ms after close(), before the reply`);
    await settles(closing, 2_000);
    await assertNoTrace(server);
    assert.equal(await server.command("HEXISTS", "surelock:{in-flight}:lock", "c"), 1, "the attempt did found a hold");
  });

  it("a re-entry whose attempt is on the wire rejects with ClosedError too, and the outer lease is released", async () => {
    const locks = await warm();
    await assert.rejects(locks.withLock("nested", async () => {
      proxy.setLatency(0, 400);
      const onWire = proxy.seen("{nested}");
      const inner = locks.withLock("nested", () => "never");
      await onWire;
      void locks.close();
      return inner;
    }), ClosedError);
    proxy.setLatency(0, 0);
    await assertNoTrace(server);
  });

  it("ioredis without resend: close() leaves no listener on the client, even with a call whose reply never came", async () => {
    const redis = h.client({ autoResendUnfulfilledCommands: false }, proxy);
    const locks = await warm({ redis, commandTimeout: 300 });
    const before = redis.listenerCount("close");
    proxy.blackhole();
    const stuck = await settles(locks.mutex("stuck").tryAcquire(), 3_000);
    assert.ok(!stuck.ok, "the call without a reply is bounded by the command timeout");
    assert.equal(redis.listenerCount("close"), before + 1, "while the call is on the wire, the adapter watches the connection");
    await locks.close();
    assert.equal(redis.listenerCount("close"), before, "close() took its listener off the user's client");
    proxy.heal("reset");
  });

  it("ioredis: close() is bounded when the wake-up connection is blackholed (QUIT never answered)", async () => {
    const holder = await h.locks().mutex("quiet").acquire();
    const locks = await warm({ commandTimeout: 300 });
    const waiting = startsWaiting("quiet");
    const pending = settles(locks.mutex("quiet").acquire(), 5_000);
    await waiting;
    await eventually(async () => Number(((await server.command("PUBSUB", "NUMSUB", "surelock:{quiet}:wake")) as [string, number])[1]) === 1,
      3_000, "subscribed");
    proxy.blackhole();
    const s = await settles(locks.close(), 3_000);
    assert.ok(s.ok);
    assert.ok(s.atMs < 1_000, `close() took ${s.atMs.toFixed(0)} ms with a command timeout of 300 ms`);
    assert.ok(rejection(await pending) instanceof ClosedError);
    await holder.release();
    // The wake-up connection is gone, not left hanging in the partition.
    await eventually(() => proxy.connectionCount() <= 1, 3_000, "the subscriber connection closed");
  });

  it("ioredis: a waiter whose wake-up connection cannot be opened is still served (its ticket refresh reports the grant)", async () => {
    const holder = await h.locks().mutex("deaf").acquire();
    const locks = await warm({ ttl: 300 });
    proxy.silenceNew(true);
    const waiting = startsWaiting("deaf");
    const pending = locks.mutex("deaf").acquire({ timeout: 8_000 });
    await waiting;
    await holder.release();
    const s = await settles(pending, 8_000);
    assert.ok(s.ok, `the waiter was not served: ${String((s as { error?: unknown }).error)}`);
    assert.ok(s.atMs < 3_000, `served after ${s.atMs.toFixed(0)} ms`);
    await s.value.release();
  });

  it("node-redis: close() is bounded when the wake-up connection never finishes connecting, and it does not linger", async () => {
    const user = createClient({ socket: { host: proxy.host, port: proxy.port, reconnectStrategy: 50 } });
    user.on("error", () => {});
    await user.connect();
    h.onCleanup(() => user.destroy());
    const locks = new Surelock({ redis: user, commandTimeout: 300 });
    await (await locks.mutex("warm-up").acquire()).release();
    const holder = await h.locks().mutex("never-open").acquire();
    proxy.silenceNew(true);
    const waiting = startsWaiting("never-open");
    const pending = settles(locks.mutex("never-open").acquire(), 5_000);
    await waiting;
    const s = await settles(locks.close(), 3_000);
    assert.ok(s.ok);
    assert.ok(s.atMs < 1_000, `close() took ${s.atMs.toFixed(0)} ms with a command timeout of 300 ms`);
    assert.ok(rejection(await pending) instanceof ClosedError);
    await holder.release();
    // Heal the network: the half-open duplicate must not come to life and stay connected.
    proxy.silenceNew(false);
    proxy.resetAll();
    await eventually(() => proxy.connectionCount() === 1, 5_000, "the user's connection back through the proxy");
    // Proving that something does not happen: the abandoned duplicate does not reconnect.
    await quietFor(500);
    assert.equal(proxy.connectionCount(), 1, "only the user's own connection goes through the proxy");
  });
});

describe("close() with leases held is a shutdown, not a loss", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  after(async () => { await h.cleanup(); await server.stop(); });

  it("the leases' signals abort with reason \"closed\", surelock:lost hears nothing, an election resigns, and Redis is left clean", async () => {
    const lost: unknown[] = [];
    const leader: { event: string }[] = [];
    const onLost = (m: unknown): void => { lost.push(m); };
    const onLeader = (m: unknown): void => { leader.push(m as { event: string }); };
    diagnostics.subscribe("surelock:lost", onLost);
    diagnostics.subscribe("surelock:leader", onLeader);
    try {
      const locks = h.locks();
      const lease = await locks.mutex("deploy").acquire();
      const permit = await locks.semaphore("deploy-pool", { permits: 2 }).acquire();
      const leadership = await locks.election("deploy-leader").campaign({ value: "me" });
      let inWork: unknown;
      const work = locks.withLock("deploy-job", (l) => new Promise((resolve) => {
        l.signal.addEventListener("abort", () => { inWork = l.signal.reason; resolve("stopped"); }, { once: true });
        void locks.close();
      }));
      await assert.rejects(work, (e: unknown) => e instanceof LockLostError && e.reason === "closed");
      await locks.close();
      for (const l of [lease, permit, leadership]) {
        assert.ok(l.signal.aborted);
        const reason = l.signal.reason as LockLostError;
        assert.ok(reason instanceof LockLostError && reason.reason === "closed", String(reason));
      }
      assert.ok(inWork instanceof LockLostError && inWork.reason === "closed", String(inWork));
      assert.deepEqual(lost, [], "no loss published for a shutdown");
      assert.deepEqual(leader.map((m) => m.event), ["elected", "resigned"]);
      // Given back, not left to expire: another instance takes each at once.
      const other = h.locks();
      for (const taken of [other.mutex("deploy").tryAcquire(), other.semaphore("deploy-pool", { permits: 2 }).tryAcquire({ permits: 2 }),
        other.mutex("deploy-job").tryAcquire(), other.election("deploy-leader").campaign({ value: "next", timeout: 0 })]) {
        const next = await taken;
        assert.ok(next, "free again");
        await next.release();
      }
      assert.equal(await other.election("deploy-leader").leader(), null);
    } finally {
      diagnostics.unsubscribe("surelock:lost", onLost);
      diagnostics.unsubscribe("surelock:leader", onLeader);
    }
  });
});

describe("a wake-up subscription that never completes (a custom adapter)", () => {
  it("the waiter is still served by its ticket refresh once the lock is free, rather than waiting for the subscription", async () => {
    const { MemoryRedis } = await import("../../src/testing/index.js");
    const memory = new MemoryRedis();
    // An adapter whose subscriber connection accepts SUBSCRIBE and never confirms it.
    const deaf = {
      name: "deaf", cluster: false,
      evalsha: memory.evalsha.bind(memory), eval: memory.eval.bind(memory), command: memory.command.bind(memory),
      createSubscriber: async () => ({
        subscribe: () => new Promise<void>(() => {}), unsubscribe: async () => {}, onMessage: () => {}, onReconnect: () => {}, close: async () => {},
      }),
    };
    const holderSide = new Surelock({ redis: memory.duplicate() });
    const waiterSide = new Surelock({ redis: deaf, ttl: 300 });
    const held = await holderSide.mutex("deaf-adapter").acquire();
    const waits = startsWaiting("deaf-adapter");
    const pending = settles(waiterSide.mutex("deaf-adapter").acquire({ timeout: 5_000 }), 6_000);
    await waits;
    await held.release();
    const s = await pending;
    assert.ok(s.ok, `not served: ${String((s as { error?: unknown }).error)}`);
    await s.value.release();
    await Promise.all([holderSide.close(), waiterSide.close()]);
  });
});

describe("close() on a Sentinel client (ioredis with failoverDetector)", () => {
  let set: SentinelSet;
  let h: Harness;
  before(async () => { set = await startSentinelSet({ replicas: 0, sentinels: 1 }); h = new Harness(set.primary); });
  afterEach(() => h.cleanup());
  after(() => set.stop());

  /** Connections subscribed at the Sentinel now: each client's failover detector, listening for a switch of primary. */
  const watchers = async (): Promise<number> => {
    const list = String(await (set.sentinels[0] as RedisServer).command("CLIENT", "LIST"));
    return list.split("\n").filter((line) => /\b(p?sub)=[1-9]/.test(line)).length;
  };

  it("the wake-up connection, a duplicate that also watches the Sentinel for failovers, keeps no connection to it once close() quit it (torture seed 4)", async () => {
    const user = new Redis({ sentinels: set.sentinelAddresses(), name: set.masterName, failoverDetector: true, sentinelRetryStrategy: () => 100 });
    user.on("error", () => {});
    h.onCleanup(() => user.disconnect());
    await user.ping();
    // The user's client watches the Sentinel (its own failover detector): that one stays.
    await eventually(async () => (await watchers()) === 1, 3_000, "the user's failover detector at the Sentinel");
    const locks = new Surelock({ redis: user });
    const holder = await h.locks().mutex("watched").acquire();
    const waiting = startsWaiting("watched");
    const pending = settles(locks.mutex("watched").acquire(), 5_000);
    await waiting;
    // The waiter's wake-up connection (a duplicate of the user's client) is up, with a detector of its own.
    await eventually(async () => (await watchers()) === 2, 3_000, "the wake-up connection's failover detector at the Sentinel");
    await locks.close();
    assert.ok(rejection(await pending) instanceof ClosedError);
    await holder.release();
    // QUIT ends the duplicate's connection to the primary, not its failover detector's.
    await eventually(async () => (await watchers()) === 1, 3_000, "only the user's own detector left at the Sentinel");
  });
});
