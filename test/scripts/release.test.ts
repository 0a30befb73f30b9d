/** release.lua: one entry back, each at most once; the last one frees the lock and grants it to the queue's head. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { tombstoneOf } from "../../src/keys.js";
import { inboxOf } from "../../src/protocol/channel.js";
import { assertAllExpire, exclusiveKeys, scriptBench, type ScriptBench } from "./bench.js";

void describe("release.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const acquire = (key: string, owner: string, hold: string, o: { entry?: string; join?: string; ticketLease?: number; ttl?: number } = {}) => {
    const k = b.exclusive(key);
    return b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, {
      owner, hold, entry: o.entry ?? hold, ttl: o.ttl ?? 10_000, join: o.join ?? "", ticketLease: o.ticketLease ?? 0, window: 10_000,
    }));
  };
  const release = (key: string, hold: string, entry: string, token: bigint | string, grant = "1", here = "") => {
    const k = b.exclusive(key);
    return scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold, entry, token: token.toString(), keep: 60_000, window: 10_000, grant, publish: "PUBLISH", here });
  };
  const tokenOf = async (key: string, owner: string, hold: string): Promise<bigint> => {
    const r = await acquire(key, owner, hold);
    assert.ok(r.status === "founded" || r.status === "entered");
    return r.token;
  };

  void it("a replayed release of a re-entered lock gives back one entry, not two", async () => {
    const k = b.exclusive("reentered");
    const token = await tokenOf("reentered", "o", "h");
    await acquire("reentered", "o", "x", { entry: "e2", join: "h" });
    const r = await b.replay(release("reentered", "h", "e2", token), exclusiveKeys(k));
    assert.deepEqual(r.first, { status: "held", entries: 1 });
    assert.deepEqual(r.second, { status: "released" }, "the replay finds the entry's tombstone");
    assert.deepEqual(r.again, r.after);
    assert.equal(await b.redis.hget(k.lock, "h"), "h", "the outer entry still holds the lock");
  });

  void it("a replayed final release answers released (not gone), even after the next holder took the lock", async () => {
    const k = b.exclusive("final");
    const token = await tokenOf("final", "o", "h");
    assert.deepEqual(await b.run(release("final", "h", "h", token)), { status: "freed", grants: [] });
    assert.deepEqual(await b.run(release("final", "h", "h", token)), { status: "released" });
    await tokenOf("final", "next", "h2");
    assert.deepEqual(await b.run(release("final", "h", "h", token)), { status: "released" });
    assert.equal(await b.redis.hget(k.lock, "h"), "h2", "the replay did not touch the next holder");
    assert.equal(await b.redis.hget(k.lock, "o"), "next");
  });

  void it("a freed lock keeps only its counter, for the retention, and publishes nothing when nobody waits", async () => {
    const k = b.exclusive("quiet");
    const listener = await b.listen(k.channel);
    const token = await tokenOf("quiet", "o", "h");
    await b.run(release("quiet", "h", "h", token));
    const fields = await b.redis.hgetall(k.lock);
    assert.deepEqual(Object.keys(fields).sort(), ["b", "c"], "the counter and its birth");
    const pttl = await b.redis.pttl(k.lock);
    assert.ok(pttl > 50_000 && pttl <= 60_000, `PTTL ${pttl}`);
    // The next acquisition continues the counter.
    assert.equal(await tokenOf("quiet", "o2", "h2"), token + 1n);
    await b.redis.ping();
    assert.deepEqual(listener.messages, []);
    listener.close();
  });

  void it("an expired hold answers gone; another hold answers taken; neither is touched", async () => {
    const token = await tokenOf("expired", "o", "h");
    await b.redis.del(b.exclusive("expired").lock);
    assert.deepEqual(await b.run(release("expired", "h", "h", token)), { status: "gone" });
    await tokenOf("expired", "other", "h2");
    assert.deepEqual(await b.run(release("expired", "h", "h", token)), { status: "taken" });
    assert.equal(await b.redis.hget(b.exclusive("expired").lock, "h"), "h2");
  });

  void it("the last entry grants the lock to the live head of the queue, with the PTTL left on its ticket", async () => {
    const k = b.exclusive("handoff");
    const listener = await b.listen(k.channel);
    const token = await tokenOf("handoff", "o", "h");
    await acquire("handoff", "waiter", "t1", { ticketLease: 3_000, ttl: 20_000 });
    await acquire("handoff", "waiter2", "t2", { ticketLease: 3_000, ttl: 20_000 });
    const reply = await b.run(release("handoff", "h", "h", token));
    assert.equal(reply.status, "freed");
    if (reply.status !== "freed") return;
    assert.equal(reply.grants.length, 1);
    const grant = reply.grants[0]!;
    assert.equal(grant.ticket, "t1");
    assert.equal(grant.token, token + 1n);
    assert.ok(grant.pttlMs > 0 && grant.pttlMs <= 3_000, `a dead head costs no more than its ticket's lease (${grant.pttlMs} ms)`);
    const lock = await b.redis.hgetall(k.lock);
    assert.deepEqual([lock.o, lock.h, lock.n, lock["@t1"], lock.q], ["waiter", "t1", undefined, undefined, "1"], "marked: served from the line");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["t2"]);
    await b.redis.ping();
    assert.deepEqual(listener.messages, [`g t1 ${grant.token} ${grant.pttlMs}`]);
    assertAllExpire(await b.snapshot(exclusiveKeys(k)));
    // The grantee's own attempt finds the grant (its ticket is its hold): no second hold.
    const again = await acquire("handoff", "waiter", "t1", { ticketLease: 3_000 });
    assert.equal(again.status, "founded");
    assert.equal(again.status === "founded" && again.token, grant.token);
    listener.close();
  });

  void it("a grant is told on the grantee instance's own part of the channel, and not at all to the releasing instance's own ticket", async () => {
    const k = b.exclusive("inbox");
    const shared = await b.listen(k.channel);
    const mine = await b.listen(inboxOf(k.channel, "mine"));
    const theirs = await b.listen(inboxOf(k.channel, "theirs"));
    const first = await tokenOf("inbox", "o", "mine.1");
    await acquire("inbox", "w", "theirs.1", { ticketLease: 3_000 });
    await acquire("inbox", "w", "mine.2", { ticketLease: 3_000 });
    // Released by instance "mine": the grant to "theirs.1" is told to "theirs" alone.
    const toTheirs = await b.run(release("inbox", "mine.1", "mine.1", first, "1", "mine"));
    assert.ok(toTheirs.status === "freed" && toTheirs.grants[0]?.ticket === "theirs.1");
    // Released by "theirs": the grant to "mine.2" is told to "mine".
    const second = toTheirs.grants[0]!.token;
    const toMine = await b.run(release("inbox", "theirs.1", "theirs.1", second, "1", "theirs"));
    assert.ok(toMine.status === "freed" && toMine.grants[0]?.ticket === "mine.2");
    // Released by "mine", granted to its own "mine.3": only in the reply, which "mine" hands over itself.
    await acquire("inbox", "w", "mine.3", { ticketLease: 3_000 });
    const third = await b.run(release("inbox", "mine.2", "mine.2", toMine.grants[0]!.token, "1", "mine"));
    assert.ok(third.status === "freed" && third.grants[0]?.ticket === "mine.3", "granted all the same, in the reply");
    await b.redis.ping();
    assert.deepEqual(theirs.messages, [`g theirs.1 ${second} ${toTheirs.grants[0]!.pttlMs}`]);
    assert.deepEqual(mine.messages, [`g mine.2 ${toMine.grants[0]!.token} ${toMine.grants[0]!.pttlMs}`], "the grant to mine.3 was not announced");
    assert.deepEqual(shared.messages, [], "nobody else hears a grant");
    for (const l of [shared, mine, theirs]) l.close();
  });

  void it("in quorum mode (no grants) the release only announces whose turn it is", async () => {
    const k = b.exclusive("turns");
    const listener = await b.listen(k.channel);
    const token = await tokenOf("turns", "o", "h");
    await acquire("turns", "w", "t1", { ticketLease: 3_000 });
    assert.deepEqual(await b.run(release("turns", "h", "h", token, "0")), { status: "freed", grants: [] });
    assert.equal(await b.redis.hexists(k.lock, "o"), 0, "nobody holds it until the head attempts");
    await b.redis.ping();
    assert.deepEqual(listener.messages, ["t t1"]);
    listener.close();
  });

  void it("hold '*' finds the hold by the entry (abandoning a join by owner whose reply was lost)", async () => {
    const k = b.exclusive("by-entry");
    await acquire("by-entry", "job", "h1", { join: "*" });
    await acquire("by-entry", "job", "zz", { entry: "lost-entry", join: "*" });
    assert.deepEqual(await b.run(release("by-entry", "*", "lost-entry", "0")), { status: "held", entries: 1 });
    assert.equal(await b.redis.hexists(k.lock, "@lost-entry"), 0);
  });

  void it("an uncontended release leaves no key of its own: a replay is answered from the hash's epoch, kept when a short successor could end it", async () => {
    const k = b.exclusive("epoch");
    const token = await tokenOf("epoch", "o", "h");
    await acquire("epoch", "o", "x", { entry: "e2", join: "h" });
    for (const entry of ["e2", "h"]) await b.run(release("epoch", "h", entry, token));
    assert.deepEqual(await b.redis.keys(`${k.released}*`), [tombstoneOf(k, "e2")],
      "no recorded epoch; a tombstone only for the re-entry given back while its hold lived on (which might yet have expired)");
    // A successor whose ttl is below the replay window (10 s here) records the epoch first: its
    // expiry takes the hash, and the evidence with it.
    const short = await acquire("epoch", "o2", "h2", { ttl: 200 });
    assert.equal(short.status, "founded");
    const recorded = await b.redis.pttl(k.released);
    assert.ok(recorded > 9_000 && recorded <= 10_000, `the epoch is kept for the window (pttl ${recorded})`);
    await b.redis.del(k.lock);
    for (const entry of ["h", "e2"]) {
      assert.deepEqual(await b.run(release("epoch", "h", entry, token)), { status: "released" }, `${entry}: a replay after the hash is gone`);
    }
    // A hold that expired took its hash (its epoch) with it: its release answers gone.
    const reborn = await tokenOf("epoch", "o3", "h3");
    await b.redis.del(k.lock);
    assert.deepEqual(await b.run(release("epoch", "h3", "h3", reborn)), { status: "gone" });
    assert.deepEqual(await b.redis.keys(`${k.released}:*`), [tombstoneOf(k, "e2")], "no tombstone of the holds' own");
  });

  void it("a hold served from the line leaves a tombstone when it ends, for its ticket's late refresh, which lives for the replay window", async () => {
    const k = b.exclusive("served");
    const token = await tokenOf("served", "o", "h");
    await acquire("served", "waiter", "t1", { ticketLease: 3_000 });
    const reply = await b.run(release("served", "h", "h", token));
    assert.equal(reply.status === "freed" && reply.grants[0]?.ticket, "t1");
    const granted = reply.status === "freed" ? reply.grants[0]!.token : 0n;
    assert.deepEqual(await b.run(release("served", "t1", "t1", granted)), { status: "freed", grants: [] });
    const pttl = await b.redis.pttl(tombstoneOf(k, "t1"));
    assert.ok(pttl > 0 && pttl <= 10_000, `the tombstone of t1 expires within the window (pttl ${pttl})`);
    assert.equal(await b.redis.exists(tombstoneOf(k, "h")), 0, "the uncontended hold before it left none");
    assert.deepEqual(await b.run(release("served", "t1", "t1", granted)), { status: "released" });
  });
});
