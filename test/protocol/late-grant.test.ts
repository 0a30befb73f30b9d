/**
 * A grant that a waiter learns of only after it lapsed unused (issue 24, overlap 1). A release
 * grants the lock to W; W hears neither the announcement nor a refresh while the grant lasts; the
 * grant expires and the lock hash with it, fencing counter included. W's stalled refresh then runs
 * on a lock with no hash and puts W back in line behind X; X takes the lock; the announcement
 * reaches W last. A "queued" reply that said counter 0 there read as "made before the grant", so
 * W counted the stale grant's validity from that refresh and believed it held the key beside X.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Endpoint } from "../../src/adapters/endpoint.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import { systemClock } from "../../src/clock.js";
import { Surelock, type Lease } from "../../src/index.js";
import { KeySpace } from "../../src/keys.js";
import { SingleStore } from "../../src/store/single-store.js";
import type { AcquireCall } from "../../src/store/types.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { eventually, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("a grant learned of after it lapsed", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  const closers: (() => Promise<unknown> | void)[] = [];
  const keys = new KeySpace("surelock");
  before(async () => { server = await startStandalone(); });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await proxy.close();
    await server.command("FLUSHALL");
  });
  after(() => server.stop());

  it("is not trusted on the strength of a refresh that ran after the counter it was issued from expired", async () => {
    const k = keys.exclusive("late");
    proxy = await startFaultProxy(server, { name: "w", framing: "resp" });
    // W: a waiter whose connections (commands and wake-ups) go through the proxy.
    const wRedis = new Redis({ host: proxy.host, port: proxy.port });
    wRedis.on("error", () => {});
    const w = new Surelock({ redis: wRedis, ttl: 1_500, commandTimeout: 10_000 });
    // Y: the holder whose release grants the lock to W.
    const yRedis = new Redis({ host: server.host, port: server.port });
    const y = new Surelock({ redis: yRedis, ttl: 10_000 });
    // X: another waiter, at the store level so that its ticket stands for 20 s without a refresh
    // and it attempts exactly when the test says (a waiter whose turn message arrives then).
    const xRedis = new Redis({ host: server.host, port: server.port });
    const x = new SingleStore(new Endpoint(new IoredisAdapter(xRedis), { clock: systemClock, timeoutMs: 5_000 }), {
      keepMs: 60_000, replayWindowMs: 10_000, grants: true,
    });
    closers.push(() => wRedis.disconnect(), () => w.close(), () => yRedis.disconnect(), () => y.close(), () => xRedis.disconnect());
    const xCall: AcquireCall = {
      target: { family: "exclusive", keys: k },
      ask: { owner: "x", hold: "x.1", ttlMs: 10_000, mode: "x", permits: 1, ticketLeaseMs: 20_000 },
      entry: "x.1",
      reentry: { kind: "fresh" },
    };

    const held = await y.mutex("late").acquire();
    const stop = new AbortController();
    const wLease = w.mutex("late").acquire({ signal: stop.signal });
    wLease.catch(() => {});
    let wTicket = "";
    await eventually(async () => {
      wTicket = ((await server.command("LRANGE", k.queue, 0, -1)) as string[])[0] ?? "";
      return wTicket !== "";
    }, 5_000, "W in line");
    // W listens on its own part of the lock's channel before anything is held from it.
    const inbox = `${k.channel}:${wTicket.split(".")[0]}`;
    await eventually(async () => ((await server.command("PUBSUB", "NUMSUB", inbox)) as [string, number])[1] === 1, 5_000, "W subscribed");
    assert.equal((await x.acquire(xCall)).status, "busy", "X stands behind W");

    // Right after one of W's refreshes: its next one is a third of its ticket lease (500 ms) away.
    const before = await server.command("HGET", k.tickets, wTicket);
    await eventually(async () => (await server.command("HGET", k.tickets, wTicket)) !== before, 5_000, "a refresh of W");
    proxy.holdPushes();
    proxy.blackhole();
    await held.release();
    const grant = (await server.command("HMGET", k.lock, "h", "t")) as [string | null, string | null];
    assert.equal(grant[0], wTicket, "the release granted the lock to W");
    // The grant lapses unused (W hears nothing), and the hash goes with it, counter and all.
    await eventually(async () => (await server.command("EXISTS", k.lock)) === 0, 5_000, "the grant lapsed");
    // W's stalled refresh runs now: W stands again, behind X, on a lock with no counter.
    proxy.heal("deliver");
    await eventually(async () => (await server.command("LRANGE", k.queue, 0, -1) as string[]).includes(wTicket), 5_000, "W back in line");
    // Its reply reaches W before the PING's on the same connection, and W reads it before the next turn of the loop.
    await wRedis.ping();
    await new Promise((resolve) => setImmediate(resolve));
    const taken = await x.acquire(xCall);
    assert.equal(taken.status, "founded", "X takes the lock: its ticket heads the line");
    // The announcement of the lapsed grant reaches W last.
    proxy.releasePushes("deliver");

    // W either resolves (and must then hold the key alone) or gives the stale grant back and waits
    // under a new ticket.
    let lease: Lease | undefined;
    await within(5_000, Promise.race([
      wLease.then((l) => { lease = l; }),
      eventually(async () => {
        const line = (await server.command("LRANGE", k.queue, 0, -1)) as string[];
        return line.some((t) => t !== wTicket && t.startsWith(`${wTicket.split(".")[0]}.`));
      }, 5_000, "W waiting under a new ticket"),
    ]));
    const holder = await server.command("HGET", k.lock, "h");
    assert.equal(holder, "x.1", "X holds the lock in Redis");
    assert.ok(!(lease?.held ?? false), `W believes it holds the key X holds (token ${String(lease?.fencingToken)} beside X's)`);
    stop.abort();
    await assert.rejects(wLease);
    if (taken.status === "founded") await x.release(taken.ref, "x.1");
  });
});
