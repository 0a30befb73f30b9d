/** keepalive.lua: renews live holds only, refreshes tickets, reports grants; never founds anything. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { holdState, scripts, ticketState } from "../../src/protocol/index.js";
import { tombstoneOf } from "../../src/keys.js";
import { scriptBench, type ScriptBench } from "./bench.js";

void describe("keepalive.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const found = async (key: string, owner: string, hold: string, ticketLease = 0) => {
    const k = b.exclusive(key);
    return b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
      { owner, hold, entry: hold, ttl: 10_000, join: "", ticketLease, window: 10_000 }));
  };

  void it("renews each hold that is still its own, and only that one; a replay is harmless", async () => {
    await found("ka1", "o", "h1");
    await found("ka2", "o", "h2");
    await found("ka3", "someone", "other");
    const [k1, k2, k3] = ["ka1", "ka2", "ka3"].map((k) => b.exclusive(k));
    const call = scripts.keepalive.call({}, {}, {
      keys: [k1!.lock, k2!.lock, k3!.lock, b.exclusive("missing").lock],
      args: ["x", "h1", 60_000, "x", "h2", 60_000, "x", "h3", 60_000, "x", "h4", 60_000],
    });
    await b.redis.pexpire(k1!.lock, 1_000);
    const r = await b.replay(call, [k1!.lock, k2!.lock, k3!.lock]);
    assert.deepEqual(r.first.map((x) => holdState("keepalive", x)), ["held", "held", "taken", "gone"]);
    assert.deepEqual(r.second, r.first);
    assert.ok((await b.redis.pttl(k1!.lock)) > 50_000, "renewed to the ttl it sent");
    assert.ok((await b.redis.pttl(k3!.lock)) <= 10_000, "another hold's lock is not prolonged");
    assert.equal(await b.redis.exists(b.exclusive("missing").lock), 0, "a gone hold is not revived");
  });

  void it("a renewal only ever lengthens a hold's life: a shorter ttl leaves it as it is (sharers of one hold)", async () => {
    await found("ka-long", "o", "hl");
    const k = b.exclusive("ka-long");
    const renew = (ttl: number) => scripts.keepalive.call({}, {}, { keys: [k.lock], args: ["x", "hl", ttl] });
    assert.deepEqual(await b.run(renew(1_000)), [1]);
    assert.ok((await b.redis.pttl(k.lock)) > 5_000, "not shortened to 1 s");
    assert.deepEqual(await b.run(renew(60_000)), [1]);
    assert.ok((await b.redis.pttl(k.lock)) > 50_000, "lengthened to 60 s");
  });

  void it("a ticket refresh keeps the waiter's place, reports a grant, and says when the free lock is its turn", async () => {
    const k = b.exclusive("tq");
    const holder = await found("tq", "holder", "h");
    await found("tq", "w1", "t1", 3_000);
    const refresh = (ticket: string) => scripts.keepalive.call({}, {}, { keys: [k.lock, k.queue, k.tickets, tombstoneOf(k, ticket)], args: ["q", ticket, 3_000, 10_000, "w"] });
    const counter = BigInt((await b.redis.hget(k.lock, "c")) ?? "0");
    assert.deepEqual(ticketState((await b.run(refresh("t1")))[0]), { status: "queued", position: 0, counter });
    // The holder vanished without a handoff: the head is told to attempt; nothing is founded here.
    await b.redis.hdel(k.lock, "o", "h", "t", "n", "@h");
    assert.deepEqual(ticketState((await b.run(refresh("t1")))[0]), { status: "turn" });
    assert.equal(await b.redis.hexists(k.lock, "o"), 0);
    // Once founded for it (a grant whose message was lost), the refresh reports it.
    const granted = await found("tq", "w1", "t1", 3_000);
    assert.equal(granted.status, "founded");
    const state = ticketState((await b.run(refresh("t1")))[0]);
    assert.equal(state.status, "granted");
    assert.ok(state.status === "granted" && granted.status === "founded" && state.token === granted.token);
    assert.ok(holder.status === "founded");
  });

  void it("a refresh that arrives after its ticket's hold was granted and given back does not stand again", async () => {
    // The waiter's refresh was on the wire while the lock was granted to its ticket, the lease
    // taken and released. Standing again would put a ghost at the head of the line: refused to
    // everyone else, and granted by the next release to a waiter that is gone.
    const k = b.exclusive("late");
    const release = (hold: string) => scripts.release.call(
      { lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold, entry: hold, token: "0", keep: 60_000, window: 60_000, grant: "1", publish: "PUBLISH", here: "" });
    await found("late", "holder", "h");
    await found("late", "w", "t", 3_000);
    const freed = await b.run(release("h"));
    assert.ok(freed.status === "freed" && freed.grants[0]?.ticket === "t", "granted to the waiter's ticket");
    await b.run(release("t"));
    const refresh = scripts.keepalive.call({}, {}, { keys: [k.lock, k.queue, k.tickets, tombstoneOf(k, "t")], args: ["q", "t", 3_000, 10_000, "w"] });
    assert.deepEqual(ticketState((await b.run(refresh))[0]), { status: "done" });
    assert.equal(await b.redis.llen(k.queue), 0, "nobody in line");
    assert.equal(await b.redis.hexists(k.tickets, "t"), 0);
    const next = await found("late", "someone", "n");
    assert.equal(next.status, "founded", "the free lock goes to the next caller at once");
  });

  void it("a shared ticket too: granted and given back, a late refresh does not stand again", async () => {
    const s = b.shared("late-s", "sem");
    const acquire = (hold: string, ticketLease: number) => b.run(scripts.acquireShared.call(
      { state: s.state, holders: s.holders, entries: s.entries, queue: s.queue, tickets: s.tickets },
      { owner: hold, hold, entry: hold, ttl: 10_000, mode: "s", permits: 1, limit: 1, join: "", ticketLease, keep: 60_000 }));
    const release = (hold: string) => b.run(scripts.releaseShared.call(
      { state: s.state, holders: s.holders, entries: s.entries, queue: s.queue, tickets: s.tickets, channel: s.channel },
      { hold, entry: hold, window: 60_000, keep: 60_000, grant: "1", publish: "PUBLISH" }));
    await acquire("h", 0);
    await acquire("t", 3_000);
    await release("h");
    await release("t");
    const refresh = scripts.keepalive.call({}, {}, {
      keys: [s.state, s.holders, s.entries, s.queue, s.tickets], args: ["Q", "t", 3_000, 10_000, "t", "s", 1],
    });
    assert.deepEqual(ticketState((await b.run(refresh))[0]), { status: "done" });
    assert.equal(await b.redis.llen(s.queue), 0, "nobody in line");
    assert.equal((await acquire("n", 0)).status, "founded");
  });

  void it("shared holds and tickets too, in the same call", async () => {
    const s = b.shared("ks", "sem");
    const acquire = (hold: string, ticketLease: number) => b.run(scripts.acquireShared.call(
      { state: s.state, holders: s.holders, entries: s.entries, queue: s.queue, tickets: s.tickets },
      { owner: hold, hold, entry: hold, ttl: 1_000, mode: "s", permits: 1, limit: 1, join: "", ticketLease, keep: 60_000 }));
    await acquire("p1", 0);
    await acquire("p2", 3_000);
    const replies = await b.run(scripts.keepalive.call({}, {}, {
      keys: [s.state, s.holders, s.entries, s.state, s.holders, s.entries, s.queue, s.tickets],
      args: ["s", "p1", 60_000, "Q", "p2", 3_000, 1_000, "p2", "s", 1],
    }));
    assert.equal(holdState("keepalive", replies[0]), "held");
    assert.deepEqual(ticketState(replies[1]), { status: "queued", position: 0, counter: BigInt((await b.redis.hget(s.state, "c")) ?? "0") });
    const deadline = Number(await b.redis.zscore(s.holders, "p1"));
    const [seconds] = (await b.redis.time()) as unknown as [string, string];
    assert.ok(deadline - Number(seconds) * 1_000 > 50_000, "the permit's deadline moved to the ttl sent");
  });
});
