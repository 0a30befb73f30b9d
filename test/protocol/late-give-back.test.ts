/**
 * A late reply's give-back never lands behind a newer attempt of the same identity. An attempt
 * whose reply misses its deadline still ran (or will run) on Redis, and what it took is given
 * back when its reply comes; but a caller that asked again meanwhile with the same hold id (a
 * quorum round, a waiter's next attempt) has that newer attempt on the wire behind it, which
 * finds the hold (a replay) and counts it. A give-back sent when the old reply arrives would run
 * after it and delete that hold under a lease that believes it (torture seed 3 on quorum).
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Endpoint } from "../../src/adapters/endpoint.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import { systemClock } from "../../src/clock.js";
import { ConnectionError } from "../../src/errors.js";
import { KeySpace } from "../../src/keys.js";
import { scripts } from "../../src/protocol/index.js";
import { SingleStore } from "../../src/store/single-store.js";
import type { AcquireCall, Reentry, TicketState } from "../../src/store/types.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("a late reply's give-back", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let redis: Redis;
  let store: SingleStore;
  const keys = new KeySpace("surelock");
  before(async () => {
    server = await startStandalone();
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    redis = new Redis({ host: proxy.host, port: proxy.port, maxRetriesPerRequest: 0 });
    redis.on("error", () => {});
    store = new SingleStore(new Endpoint(new IoredisAdapter(redis), { clock: systemClock, timeoutMs: 1_000 }), {
      keepMs: 60_000, replayWindowMs: 10_000, grants: true,
    });
    await store.endpoint.command(["PING"]);
  });
  afterEach(async () => {
    proxy.setLatency(0, 0);
    if (proxy.blackholed) proxy.heal("deliver");
    await server.command("FLUSHALL");
  });
  after(async () => { redis.disconnect(); await proxy.close(); await server.stop(); });

  const callFor = (key: string, hold: string, owner = "o", reentry: Reentry = { kind: "fresh" }): AcquireCall => ({
    target: { family: "exclusive", keys: keys.exclusive(key) },
    ask: { owner, hold, ttlMs: 10_000, mode: "x", permits: 1, ticketLeaseMs: 3_000 },
    entry: hold,
    reentry,
  });

  it("is not sent once the same identity was attempted again: the newer attempt's hold stays", async () => {
    const call = callFor("late", "h1");
    proxy.blackhole();
    await assert.rejects(store.acquire(call), ConnectionError, "the first attempt misses its deadline");
    // Asked again, the first attempt still unanswered; the link heals and both run, in order.
    const again = store.acquire(call);
    proxy.heal("deliver");
    const result = await again;
    assert.equal(result.status, "founded", "the newer attempt finds the hold the first one founded");
    // Anything the old reply triggered was sent before this PING, on the same connection.
    await store.endpoint.command(["PING"]);
    assert.equal(await server.command("HGET", "surelock:{late}:lock", "h"), "h1", "the hold the newer attempt counts is still there");
  });

  it("is sent when nothing newer was: an attempt answered too late gives back what it took", async () => {
    const call = callFor("alone", "h2");
    proxy.blackhole();
    await assert.rejects(store.acquire(call), ConnectionError);
    proxy.heal("deliver");
    // The late reply comes before this PING's; the give-back it sends, before the second one's.
    await store.endpoint.command(["PING"]);
    await store.endpoint.command(["PING"]);
    assert.notEqual(await server.command("HGET", "surelock:{alone}:lock", "c"), null, "the late attempt ran");
    assert.equal(await server.command("HGET", "surelock:{alone}:lock", "h"), null, "and what it founded was given back");
  });

  it("lands whole before a newer attempt sent while it is on the wire: a join by owner keeps its entry", async () => {
    // Torture seed 45 (single): a waiter's attempt to join its owner's hold missed its deadline
    // while Redis was paused; its late reply gave the entry back in two scripts (leave the line,
    // then release the entry), the second sent only once the first was answered. The waiter's
    // next attempt (the same identity) went out in between, found its entry (a replay) and
    // answered "entered"; the release then took that entry out, and the hold ended under the
    // waiter's lease when the other sharers released.
    const key = "join";
    const lock = "surelock:{join}:lock";
    const sharer = callFor(key, "hB", "own", { kind: "owner" });
    const founded = await within(5_000, store.acquire(sharer), "the sharer's acquire");
    assert.equal(founded.status, "founded");
    const joiner = callFor(key, "hA", "own", { kind: "owner" });
    proxy.blackhole();
    await within(5_000, assert.rejects(store.acquire(joiner), ConnectionError, "the join misses its deadline"), "the join");
    // Replies now take a while: the late reply's give-back has a round trip in flight when the
    // newer attempt is sent.
    proxy.setLatency(0, 100);
    const givingBack = proxy.seen(scripts.leaveQueue.sha);
    proxy.heal("deliver");
    await within(5_000, givingBack, "the late reply's give-back");
    const again = await within(5_000, store.acquire(joiner), "the newer attempt");
    assert.equal(again.status, "entered", "the newer attempt is in the sharer's hold");
    // Whatever the give-back still had to send went out before the first PING's reply came.
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    assert.equal(await server.command("HGET", lock, "@hA"), "2", "the entry the newer attempt counts is still there");
    // The sharer leaves: the joiner's entry keeps the lock held, nobody else can take it.
    const left = await within(5_000, store.release({ target: joiner.target, hold: "hB", token: 0n }, "hB"), "the sharer's release");
    assert.equal(left.status, "held");
    const other = await within(5_000, store.acquire(callFor(key, "hC")), "another owner's attempt");
    assert.equal(other.status, "busy", "the lock is still the joiner's");
  });

  it("is not sent once a refresh of the ticket was: the grant the refresh reports stays", async () => {
    // The same run could also have gone this way: the waiter's ticket refresh, sent while the
    // attempt's reply was late, found the hold that attempt founded for the ticket and reported it
    // granted; the late reply's give-back, sent after that refresh, would take the hold away.
    const key = "refresh";
    const lock = "surelock:{refresh}:lock";
    const call = callFor(key, "hR", "own", { kind: "owner" });
    // The refresh script is loaded first: a NOSCRIPT would send the refresh again after the give-back.
    await within(5_000, store.keepalive([{ kind: "ticket", target: call.target, ask: { ...call.ask, hold: "warm" } }]), "a first refresh");
    await server.command("FLUSHALL");
    proxy.blackhole();
    await within(5_000, assert.rejects(store.acquire(call), ConnectionError, "the attempt misses its deadline"), "the attempt");
    // The refresh goes out behind the attempt; the attempt's reply comes (late) before its reply.
    proxy.setLatency(0, 100);
    const refresh = store.keepalive([{ kind: "ticket", target: call.target, ask: call.ask }]);
    proxy.heal("deliver");
    const [state] = await within(5_000, refresh, "the refresh");
    assert.equal((state as TicketState).status, "granted", "the refresh found the hold the attempt founded for the ticket");
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    assert.equal(await server.command("HGET", lock, "h"), "hR", "the hold the refresh reported is still there");
  });

  it("holds a newer attempt back while the give-back is on the wire, and drops it if its caller stops meanwhile", async () => {
    const key = "stopped";
    const call = callFor(key, "hS");
    proxy.blackhole();
    await within(5_000, assert.rejects(store.acquire(call), ConnectionError, "the attempt misses its deadline"), "the attempt");
    proxy.setLatency(0, 100);
    const givingBack = proxy.seen(scripts.leaveQueue.sha);
    proxy.heal("deliver");
    await within(5_000, givingBack, "the late reply's give-back");
    const stop = new AbortController();
    const again = store.acquire(call, stop.signal);
    stop.abort(new Error("the caller stopped"));
    await within(5_000, assert.rejects(again, /the caller stopped/), "the held-back attempt");
    // The give-back settled before the first PING's reply came; an attempt sent then, before the second's.
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    await within(5_000, store.endpoint.command(["PING"]), "a ping");
    assert.equal(await server.command("HGET", "surelock:{stopped}:lock", "h"), null, "the late attempt's hold was given back");
    assert.equal(await server.command("LLEN", "surelock:{stopped}:queue"), 0, "and the stopped attempt queued nothing");
  });
});
