/** Leader election against a real redis-server: campaign, proclaim, resign, leader, observe. */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { describe, it } from "node:test";
import { type LeaderMessage, LockLostError, LockNotHeldError, LockTimeoutError } from "../../src/index.js";
import { aborted, eventually, Harness, quietFor, standaloneSuite, startsWaiting, within } from "../helpers/fixtures.js";
import type { RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";
import { Observed } from "./support.js";

describe("leader election", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  it("one leader among candidates of several instances; resign() hands over to the next, whose token is larger", async () => {
    const elections = [0, 1, 2].map(() => h.locks().election("jobs"));
    const leaders = elections.map((e, i) => e.campaign({ value: `node-${i}` }).then((lease) => ({ i, lease })));
    const first = await within(2_000, Promise.race(leaders));
    // The two others wait: proven by their campaigns staying pending for a while.
    const settled = await Promise.race([Promise.all(leaders.filter((_, i) => i !== first.i)).then(() => true), quietFor(300).then(() => false)]);
    assert.equal(settled, false, "only one campaign resolved");
    assert.equal((await elections[0]!.leader())?.value, `node-${first.i}`);
    await elections[first.i]!.resign();
    const second = await within(2_000, Promise.race(leaders.filter((_, i) => i !== first.i)));
    assert.ok(second.lease.fencingToken > first.lease.fencingToken);
    assert.equal(first.lease.held, false);
    const now = await elections[first.i]!.leader();
    assert.deepEqual([now?.owner, now?.value, now?.fencingToken], [second.lease.owner, `node-${second.i}`, second.lease.fencingToken]);
    await elections[second.i]!.resign();
    const third = await within(2_000, Promise.race(leaders.filter((_, i) => i !== first.i && i !== second.i)));
    await elections[third.i]!.resign();
    assert.equal(await elections[0]!.leader(), null);
  });

  it("leader() reads owner, value and token from Redis; proclaim() changes the value; without leading it throws LockNotHeldError", async () => {
    const e = h.locks().election("svc");
    const other = h.locks().election("svc");
    assert.equal(await other.leader(), null);
    const lease = await e.campaign({ value: "10.0.0.1:80" });
    const read = await other.leader();
    assert.ok(read && read.expiresInMs > 25_000 && read.expiresInMs <= 30_000);
    assert.deepEqual([read.owner, read.value, read.fencingToken], [lease.owner, "10.0.0.1:80", lease.fencingToken]);
    await e.proclaim("10.0.0.2:80");
    assert.equal((await other.leader())?.value, "10.0.0.2:80");
    await assert.rejects(other.proclaim("intruder"), LockNotHeldError);
    assert.equal((await other.leader())?.value, "10.0.0.2:80");
    // A campaign without a value leads with none.
    await e.resign();
    const plain = await other.campaign();
    assert.deepEqual(await e.leader().then((l) => [l?.owner, l?.value]), [plain.owner, null]);
    await other.resign();
    await assert.rejects(e.proclaim("after resign"), LockNotHeldError);
  });

  it("resign() rejects a pending campaign with an AbortError and leaves nothing in the queue", async () => {
    const leader = h.locks().election("q");
    await leader.campaign();
    const waiter = h.locks().election("q");
    const waiting = startsWaiting("q");
    const pending = waiter.campaign({ value: "never" });
    await waiting;
    await waiter.resign();
    await assert.rejects(pending, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    await eventually(async () => (await server.command("LLEN", "surelock:election:{q}:queue")) === 0, 2_000, "the ticket to leave");
    await leader.resign();
    assert.equal(await leader.leader(), null);
  });

  it("campaign({ timeout }) rejects with LockTimeoutError, campaign({ signal }) with the signal's reason", async () => {
    const leader = h.locks().election("busy");
    await leader.campaign();
    const e = h.locks().election("busy");
    await assert.rejects(e.campaign({ timeout: 0 }), LockTimeoutError);
    await assert.rejects(e.campaign({ timeout: 100 }), LockTimeoutError);
    const stop = new AbortController();
    const reason = new Error("shutting down");
    const waiting = startsWaiting("busy");
    const pending = e.campaign({ signal: stop.signal });
    await waiting;
    stop.abort(reason);
    await assert.rejects(pending, (err: unknown) => err === reason);
    await leader.resign();
  });

  it("a leader whose lease is lost: its signal aborts, surelock:leader says lost, and leader() shows none", async () => {
    const events: LeaderMessage[] = [];
    const onLeader = (m: unknown): void => { events.push(m as LeaderMessage); };
    diagnostics.subscribe("surelock:leader", onLeader);
    h.onCleanup(() => { diagnostics.unsubscribe("surelock:leader", onLeader); });
    const e = h.locks({ ttl: 300 }).election("fragile");
    const lease = await e.campaign({ value: "v" });
    await server.command("DEL", "surelock:election:{fragile}:lock");
    const reason = await aborted(lease.signal, 2_000);
    assert.ok(reason instanceof LockLostError);
    assert.equal(await e.leader(), null);
    assert.deepEqual(events.filter((m) => m.name === "fragile").map((m) => m.event), ["elected", "lost"]);
    await assert.rejects(e.resign(), LockLostError);
  });

  it("observe(): a first reading, then every change — elected, proclaimed, handed over, vacated by resign() and by lease.release() — and it ends on its signal", async () => {
    const watcher = h.locks().election("watched");
    const a = h.locks().election("watched");
    const b = h.locks().election("watched");
    const seen = new Observed(watcher);
    await seen.next((l) => l === null);
    const la = await a.campaign({ value: "a1" });
    await seen.next((l) => l?.value === "a1");
    await a.proclaim("a2");
    await seen.next((l) => l?.value === "a2");
    const waiting = startsWaiting("watched");
    const pb = b.campaign({ value: "b" });
    await waiting;
    await a.resign();
    const lb = await pb;
    await seen.next((l) => l?.fencingToken === lb.fencingToken);
    await lb.release();
    const vacated = await seen.next((l) => l === null, 4);
    assert.equal(vacated, null);
    await seen.stop();
    // One reading per change: no leader shown twice in a row, no value before its proclaim.
    assert.deepEqual(seen.log, ["none", `${la.owner}=a1`, `${la.owner}=a2`, `${lb.owner}=b`, "none"]);
  });

  it("observe() sees a leader that died (SIGKILL, no release) go when its lease runs out in Redis, and ends when the Surelock is closed", async () => {
    const locks = h.locks();
    const seen = new Observed(locks.election("crash"));
    const child = runFixture("candidate", [server.port, "crash", 600, 1, 60_000]);
    const elected = await within(5_000, new Promise<string>((resolve) => child.lines((l) => { if (l.startsWith("elected")) resolve(l); })));
    const leader = await seen.next((l) => l !== null);
    assert.equal(leader?.fencingToken, BigInt(elected.split(" ")[1] as string));
    const killedAt = performance.now();
    child.child.kill("SIGKILL");
    await child.done;
    await seen.next((l) => l === null, 1);
    const gone = performance.now() - killedAt;
    // Seen when its lease ran out (a timer, so late on a busy machine), not at some later poll.
    assert.ok(gone < 600 + 2_000, `none ${gone.toFixed(0)} ms after the kill (ttl 600 ms)`);
    await locks.close();
    await within(2_000, seen.done, "the observation to end on close()");
  });

  it("an observation first pulled after close() (or after its signal aborted) ends at once, opening nothing", async () => {
    const locks = h.locks();
    const late = locks.election("late").observe();
    const stop = new AbortController();
    const aborted = locks.election("late").observe({ signal: stop.signal });
    stop.abort();
    assert.deepEqual(await within(1_000, aborted.next()), { done: true, value: undefined });
    const clientsBefore = String(await server.command("CLIENT", "LIST")).trim().split("\n").length;
    await locks.close();
    assert.deepEqual(await within(1_000, late.next()), { done: true, value: undefined });
    await quietFor(300); // a subscriber connection opened now would show up by then
    const clientsAfter = String(await server.command("CLIENT", "LIST")).trim().split("\n").length;
    assert.ok(clientsAfter <= clientsBefore, `${clientsBefore} connections before, ${clientsAfter} after`);
    await assert.rejects(async () => locks.election("late").observe(), { code: "ERR_SURELOCK_CLOSED" });
  });
});

