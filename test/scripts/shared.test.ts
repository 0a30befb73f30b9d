/**
 * acquire-shared.lua, release-shared.lua and leave-queue-shared.lua: semaphore permits and
 * read-write holds in a zset, each taken and given back exactly once, served in arrival order.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { assertAllExpire, scriptBench, sharedKeys, withoutInstants, type ScriptBench } from "./bench.js";

void describe("the shared-lock scripts", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  type Mode = "s" | "r" | "w";
  const acquire = (key: string, kind: "rw" | "sem", a: { owner: string; hold: string; mode: Mode; entry?: string; permits?: number; limit?: number; join?: string; ticketLease?: number }) => {
    const k = b.shared(key, kind);
    return scripts.acquireShared.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets }, {
      owner: a.owner, hold: a.hold, entry: a.entry ?? a.hold, ttl: 10_000, mode: a.mode, permits: a.permits ?? 1, limit: a.limit ?? 0,
      join: a.join ?? "", ticketLease: a.ticketLease ?? 0, keep: 60_000,
    });
  };
  const release = (key: string, kind: "rw" | "sem", hold: string, entry = hold, grant = "1") => {
    const k = b.shared(key, kind);
    return scripts.releaseShared.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { hold, entry, window: 10_000, keep: 60_000, grant, publish: "PUBLISH" });
  };
  const live = async (key: string, kind: "rw" | "sem"): Promise<string[]> =>
    b.redis.zrangebyscore(b.shared(key, kind).holders, "(0", "+inf");

  void it("a writer served by entering its owner's write hold leaves the line (no later grant to nobody)", async () => {
    const k = b.shared("owner-writer", "rw");
    await b.run(acquire("owner-writer", "rw", { owner: "other", hold: "r0", mode: "r" }));
    await b.run(acquire("owner-writer", "rw", { owner: "job", hold: "wy", mode: "w", join: "*", ticketLease: 3_000 }));
    await b.run(acquire("owner-writer", "rw", { owner: "job", hold: "wx", mode: "w", join: "*", ticketLease: 3_000 }));
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["wy", "wx"]);
    // The reader leaves: the write lock goes to wy; wx's next attempt enters wy's hold by owner.
    const freed = await b.run(release("owner-writer", "rw", "r0"));
    assert.ok(freed.status === "freed" && freed.grants[0]?.ticket === "wy");
    const wx = await b.run(acquire("owner-writer", "rw", { owner: "job", hold: "wx", mode: "w", join: "*", ticketLease: 3_000 }));
    assert.equal(wx.status, "entered");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), [], "wx is out of line");
    assert.equal(await b.redis.hexists(k.tickets, "wx"), 0);
  });

  void it("permits: never more than the limit, and a replayed acquire takes one permit, not two", async () => {
    const k = b.shared("pdf", "sem");
    const r = await b.replay(acquire("pdf", "sem", { owner: "a", hold: "p1", mode: "s", limit: 2 }), sharedKeys(k));
    assert.ok(r.first.status === "founded" && r.second.status === "founded");
    assert.equal(r.second.token, r.first.token);
    assert.equal(r.second.hold, r.first.hold);
    assert.deepEqual(withoutInstants(r.again), withoutInstants(r.after));
    assert.equal((await b.run(acquire("pdf", "sem", { owner: "b", hold: "p2", mode: "s", limit: 2 }))).status, "founded");
    assert.equal((await b.run(acquire("pdf", "sem", { owner: "c", hold: "p3", mode: "s", limit: 2 }))).status, "busy");
    assert.deepEqual((await live("pdf", "sem")).sort(), ["p1", "p2"]);
    assertAllExpire(await b.snapshot(sharedKeys(k)));
  });

  void it("the limit is stored with the semaphore: another number is a conflict", async () => {
    await b.run(acquire("limits", "sem", { owner: "a", hold: "l1", mode: "s", limit: 2 }));
    assert.deepEqual(await b.run(acquire("limits", "sem", { owner: "b", hold: "l2", mode: "s", limit: 5 })), { status: "conflict", limit: 2 });
  });

  void it("a replayed release answers released while its tombstone lasts, and frees one place only", async () => {
    await b.run(acquire("tomb", "sem", { owner: "a", hold: "t1", mode: "s", limit: 1 }));
    assert.deepEqual(await b.run(release("tomb", "sem", "t1")), { status: "freed", grants: [] });
    assert.deepEqual(await b.run(release("tomb", "sem", "t1")), { status: "released" });
    assert.equal(await b.redis.hget(b.shared("tomb", "sem").state, "u"), "0");
    assert.deepEqual(await b.run(release("tomb", "sem", "never-held")), { status: "gone" });
  });

  void it("counted permits: a large request at the head is served before smaller ones behind it", async () => {
    const k = b.shared("counted", "sem");
    await b.run(acquire("counted", "sem", { owner: "a", hold: "c1", mode: "s", permits: 2, limit: 3 }));
    const big = await b.run(acquire("counted", "sem", { owner: "big", hold: "big", mode: "s", permits: 3, limit: 3, ticketLease: 3_000 }));
    assert.equal(big.status === "busy" && big.position, 0);
    // One permit is free, but the large request is ahead in line.
    const small = await b.run(acquire("counted", "sem", { owner: "small", hold: "small", mode: "s", permits: 1, limit: 3, ticketLease: 3_000 }));
    assert.equal(small.status === "busy" && small.position, 1);
    const freed = await b.run(release("counted", "sem", "c1"));
    assert.ok(freed.status === "freed");
    assert.deepEqual(freed.status === "freed" && freed.grants.map((g) => g.ticket), ["big"]);
    assert.deepEqual(await live("counted", "sem"), ["big"]);
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["small"]);
  });

  void it("a writer excludes readers; readers behind a waiting writer wait; the writer's release grants the readers together", async () => {
    await b.run(acquire("doc", "rw", { owner: "r1", hold: "r1", mode: "r" }));
    const writer = await b.run(acquire("doc", "rw", { owner: "w", hold: "w", mode: "w", ticketLease: 3_000 }));
    assert.equal(writer.status, "busy");
    const late = await b.run(acquire("doc", "rw", { owner: "r2", hold: "r2", mode: "r", ticketLease: 3_000 }));
    assert.equal(late.status === "busy" && late.position, 1, "a reader does not overtake a waiting writer");
    await b.run(acquire("doc", "rw", { owner: "r3", hold: "r3", mode: "r", ticketLease: 3_000 }));
    const toWriter = await b.run(release("doc", "rw", "r1"));
    assert.deepEqual(toWriter.status === "freed" && toWriter.grants.map((g) => g.ticket), ["w"]);
    const toReaders = await b.run(release("doc", "rw", "w"));
    assert.deepEqual(toReaders.status === "freed" && toReaders.grants.map((g) => g.ticket), ["r2", "r3"]);
    assert.deepEqual((await live("doc", "rw")).sort(), ["r2", "r3"]);
  });

  void it("the writer re-enters (a replay counts once) and its own flow reads past the queue", async () => {
    const k = b.shared("write-again", "rw");
    await b.run(acquire("write-again", "rw", { owner: "w", hold: "w1", mode: "w" }));
    const r = await b.replay(acquire("write-again", "rw", { owner: "w", hold: "x", entry: "w1-e2", mode: "w", join: "w1" }), sharedKeys(k));
    assert.equal(r.first.status, "entered");
    assert.equal(r.second.status, "entered");
    assert.deepEqual(withoutInstants(r.again), withoutInstants(r.after));
    assert.match((await b.redis.hget(k.state, "s:w1")) ?? "", /\|w\|2\|w$/, "two entries");
    await b.run(acquire("write-again", "rw", { owner: "other", hold: "waiting-writer", mode: "w", ticketLease: 3_000 }));
    const nested = await b.run(acquire("write-again", "rw", { owner: "w", hold: "nested-read", mode: "r", join: "w1" }));
    assert.equal(nested.status, "founded", "a read nested in the write is let in past the waiting writer");
    const replayedRelease = await b.replay(release("write-again", "rw", "w1", "w1-e2"), sharedKeys(k));
    assert.deepEqual(replayedRelease.first, { status: "held", entries: 1 });
    assert.deepEqual(replayedRelease.second, { status: "held", entries: 1 });
  });

  void it("a nested read of a hold that is gone answers gone", async () => {
    assert.deepEqual(await b.run(acquire("nested-gone", "rw", { owner: "r", hold: "n1", mode: "r", join: "no-such-hold" })), { status: "gone" });
  });

  void it("leave-queue-shared: a departed waiter's grant is given back and served to the next head", async () => {
    const k = b.shared("leave", "sem");
    await b.run(acquire("leave", "sem", { owner: "a", hold: "a", mode: "s", limit: 1 }));
    await b.run(acquire("leave", "sem", { owner: "w1", hold: "w1", mode: "s", limit: 1, ticketLease: 3_000 }));
    await b.run(acquire("leave", "sem", { owner: "w2", hold: "w2", mode: "s", limit: 1, ticketLease: 3_000 }));
    await b.run(release("leave", "sem", "a"));
    assert.deepEqual(await live("leave", "sem"), ["w1"], "granted to the head");
    const leave = scripts.leaveQueueShared.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { ticket: "w1", window: 10_000, keep: 60_000, grant: "1", publish: "PUBLISH" });
    assert.equal(await b.run(leave), 2);
    assert.deepEqual(await live("leave", "sem"), ["w2"], "the next head got the place");
    assert.equal(await b.run(leave), 0, "leaving again changes nothing");
    assert.deepEqual(await live("leave", "sem"), ["w2"]);
  });
});
