/** acquire.lua: take, re-enter or join a mutex, or stand in its queue — each exactly once. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { assertAllExpire, exclusiveKeys, scriptBench, withoutInstants, type ScriptBench } from "./bench.js";

void describe("acquire.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const acquire = (key: string, a: { owner: string; hold: string; entry?: string; ttl?: number; join?: string; ticketLease?: number }) => {
    const k = b.exclusive(key);
    return scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, {
      owner: a.owner, hold: a.hold, entry: a.entry ?? a.hold, ttl: a.ttl ?? 10_000, join: a.join ?? "", ticketLease: a.ticketLease ?? 0, window: 10_000,
    });
  };

  void it("founds a hold on a free lock, with a token from the server clock and a PTTL of the ttl", async () => {
    const reply = await b.run(acquire("free", { owner: "o1", hold: "h1", ttl: 5_000 }));
    assert.equal(reply.status, "founded");
    if (reply.status !== "founded") return;
    assert.equal(reply.hold, "h1");
    assert.equal(reply.pttlMs, 5_000);
    // The counter starts at the server's clock in microseconds.
    const [seconds] = (await b.redis.time()) as unknown as [string, string];
    assert.ok(reply.token > BigInt(seconds) * 1_000_000n - 10_000_000n, `token ${reply.token} from the server clock`);
    const lock = await b.redis.hgetall(b.exclusive("free").lock);
    // An uncontended hold writes only what it needs: no entry count (1), no entry field (its
    // founding entry is the hold), no token field (the counter is at the token it issued).
    assert.deepEqual(lock, { c: lock.c, b: lock.c, o: "o1", h: "h1" }, "the hash born here records its birth b");
    assert.equal(BigInt(lock.c as string), reply.token);
    const pttl = await b.redis.pttl(b.exclusive("free").lock);
    assert.ok(pttl > 4_000 && pttl <= 5_000);
  });

  void it("a waiter served by entering its owner's hold leaves the line, so no later release grants the lock to nobody", async () => {
    const k = b.exclusive("owner-served");
    await b.run(acquire("owner-served", { owner: "other", hold: "h0" }));
    // y, then x (both of owner "job") queue behind the holder.
    await b.run(acquire("owner-served", { owner: "job", hold: "y", join: "*", ticketLease: 3_000 }));
    await b.run(acquire("owner-served", { owner: "job", hold: "x", join: "*", ticketLease: 3_000 }));
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["y", "x"]);
    // The holder leaves; the lock goes to y; x's next attempt enters y's hold by owner.
    await b.redis.hdel(k.lock, "o", "h", "t", "n", "@h0");
    assert.equal((await b.run(acquire("owner-served", { owner: "job", hold: "y", join: "*", ticketLease: 3_000 }))).status, "founded");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["x"]);
    const x = await b.run(acquire("owner-served", { owner: "job", hold: "x", join: "*", ticketLease: 3_000 }));
    assert.equal(x.status, "entered");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), [], "x is out of line");
    assert.equal(await b.redis.hexists(k.tickets, "x"), 0);
  });

  void it("a replayed fresh acquire answers the same hold and token and changes nothing", async () => {
    const k = b.exclusive("replay-fresh");
    const r = await b.replay(acquire("replay-fresh", { owner: "o1", hold: "h1" }), exclusiveKeys(k));
    assert.deepEqual(r.second.status, r.first.status);
    assert.ok(r.first.status === "founded" && r.second.status === "founded");
    assert.equal(r.second.token, r.first.token);
    assert.equal(r.second.hold, r.first.hold);
    assert.deepEqual(r.again, r.after);
    assertAllExpire(r.again);
  });

  void it("a replayed re-entry counts once", async () => {
    const k = b.exclusive("replay-reentry");
    const founded = await b.run(acquire("replay-reentry", { owner: "o1", hold: "h1" }));
    assert.equal(founded.status, "founded");
    const r = await b.replay(acquire("replay-reentry", { owner: "o1", hold: "x", entry: "e2", join: "h1" }), exclusiveKeys(k));
    assert.equal(r.first.status, "entered");
    assert.equal(r.second.status, "entered");
    assert.deepEqual(r.again, r.after);
    assert.equal(await b.redis.hget(k.lock, "n"), "2", "two entries, not three");
  });

  void it("a re-entry of a hold that is gone answers gone and never founds a hold", async () => {
    const k = b.exclusive("reenter-gone");
    const reply = await b.run(acquire("reenter-gone", { owner: "o1", hold: "x", entry: "e", join: "dead-hold" }));
    assert.equal(reply.status, "gone");
    assert.equal(await b.redis.exists(k.lock), 0, "nothing was written");
    await b.run(acquire("reenter-gone", { owner: "o2", hold: "other" }));
    assert.equal((await b.run(acquire("reenter-gone", { owner: "o1", hold: "y", entry: "e3", join: "dead-hold" }))).status, "gone");
    assert.equal(await b.redis.hget(k.lock, "h"), "other");
    assert.equal(await b.redis.hget(k.lock, "n"), null, "the other hold keeps its one entry (no count written)");
  });

  void it("join by owner ('*') enters the hold of that owner, and founds one when the lock is free", async () => {
    const first = await b.run(acquire("shared-owner", { owner: "job-17", hold: "p1", join: "*" }));
    assert.equal(first.status, "founded");
    const second = await b.run(acquire("shared-owner", { owner: "job-17", hold: "p2", entry: "p2e", join: "*" }));
    assert.equal(second.status, "entered");
    assert.ok(second.status === "entered" && first.status === "founded" && second.hold === first.hold && second.token === first.token);
    const other = await b.run(acquire("shared-owner", { owner: "someone-else", hold: "p3", join: "*" }));
    assert.equal(other.status, "busy");
  });

  void it("a busy lock queues the caller's ticket once, and the queue serves the head first", async () => {
    const k = b.exclusive("queued");
    await b.run(acquire("queued", { owner: "holder", hold: "h" }));
    const w1 = await b.run(acquire("queued", { owner: "w1", hold: "t1", ticketLease: 3_000 }));
    const r = await b.replay(acquire("queued", { owner: "w2", hold: "t2", ticketLease: 3_000 }), exclusiveKeys(k));
    assert.equal(w1.status, "busy");
    assert.equal(w1.status === "busy" && w1.position, 0);
    const counter = BigInt((await b.redis.hget(k.lock, "c")) ?? "0");
    assert.equal(w1.status === "busy" && w1.counter, counter, "a busy answer reports the lock's counter");
    assert.equal(r.first.status === "busy" && r.first.position, 1);
    assert.equal(r.second.status === "busy" && r.second.position, 1, "a replayed attempt keeps its place");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["t1", "t2"]);
    assert.deepEqual(withoutInstants(r.again), withoutInstants(r.after));
    assertAllExpire(r.again);
    // The holder leaves without a handoff (it expired): only the head may take the free lock.
    await b.redis.del(k.lock);
    assert.equal((await b.run(acquire("queued", { owner: "w2", hold: "t2", ticketLease: 3_000 }))).status, "busy");
    assert.equal((await b.run(acquire("queued", { owner: "late", hold: "t3", ticketLease: 0 }))).status, "busy", "an arrival cannot barge ahead of the line");
    assert.equal((await b.run(acquire("queued", { owner: "w1", hold: "t1", ticketLease: 3_000 }))).status, "founded");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["t2"], "the head left the line when it took the lock");
  });

  void it("a lapsed ticket does not hold the others back", async () => {
    const k = b.exclusive("lapsed");
    await b.run(acquire("lapsed", { owner: "holder", hold: "h" }));
    await b.run(acquire("lapsed", { owner: "gone", hold: "dead", ticketLease: 60 }));
    await b.redis.del(k.lock);
    // Its lease runs out on the server's clock; proven by waiting past it.
    await new Promise((r) => setTimeout(r, 80));
    assert.equal((await b.run(acquire("lapsed", { owner: "next", hold: "n1", ticketLease: 0 }))).status, "founded");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), []);
  });
});
