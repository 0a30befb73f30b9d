/**
 * set-permits.lua, and what a limit set on purpose means to acquire-shared.lua and keepalive.lua:
 * the change is applied once (a replay changes nothing), a raise serves the waiters that now fit as
 * a release would, a lowered limit leaves holders alone and makes newcomers wait, and no ticket that
 * could never be served is left holding the line.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { eventually } from "../helpers/fixtures.js";
import { assertAllExpire, scriptBench, sharedKeys, withoutInstants, type ScriptBench } from "./bench.js";

void describe("set-permits.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const acquire = (key: string, a: { hold: string; permits?: number; limit: number; ticketLease?: number }) => {
    const k = b.shared(key, "sem");
    return scripts.acquireShared.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets }, {
      owner: `o-${a.hold}`, hold: a.hold, entry: a.hold, ttl: 10_000, mode: "s", permits: a.permits ?? 1, limit: a.limit,
      join: "", ticketLease: a.ticketLease ?? 0, keep: 60_000,
    });
  };
  const release = (key: string, hold: string) => {
    const k = b.shared(key, "sem");
    return scripts.releaseShared.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { hold, entry: hold, window: 10_000, keep: 60_000, grant: "1", publish: "PUBLISH" });
  };
  const setPermits = (key: string, limit: number, id: string, grant = "1") => {
    const k = b.shared(key, "sem");
    return scripts.setPermits.call({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { limit, id, window: 10_000, keep: 60_000, grant, publish: "PUBLISH" });
  };
  const live = (key: string): Promise<string[]> => b.redis.zrangebyscore(b.shared(key, "sem").holders, "(0", "+inf");
  const used = async (key: string): Promise<number> => Number(await b.redis.hget(b.shared(key, "sem").state, "u"));

  void it("raised: the waiters that now fit are granted in order and told so; a replay changes nothing and answers 'set before'", async () => {
    const k = b.shared("raise", "sem");
    await b.run(acquire("raise", { hold: "h", limit: 1 }));
    await b.run(acquire("raise", { hold: "w1", limit: 1, ticketLease: 3_000 }));
    await b.run(acquire("raise", { hold: "w2", limit: 1, ticketLease: 3_000 }));
    const heard = await b.listen(k.channel);
    const r = await b.replay(setPermits("raise", 3, "change-1"), sharedKeys(k));
    await eventually(() => heard.messages.length === 2, 2_000, "both grants announced");
    heard.close();
    assert.deepEqual(heard.messages.map((m) => m.split(" ").slice(0, 2).join(" ")), ["g w1", "g w2"], "announced once, not again by the replay");
    assert.ok(r.first.status === "set");
    assert.equal(r.first.previous, 1);
    assert.deepEqual(r.first.grants.map((g) => g.ticket), ["w1", "w2"]);
    assert.deepEqual(r.second, { status: "replayed" });
    assert.deepEqual(withoutInstants(r.again), withoutInstants(r.after), "the replay changed nothing");
    assert.deepEqual((await live("raise")).sort(), ["h", "w1", "w2"]);
    assert.equal(await used("raise"), 3);
    assert.equal(await b.redis.hget(k.state, "p"), "3");
    assertAllExpire(await b.snapshot(sharedKeys(k)));
  });

  void it("raised past a large request at the head: it is served first, and the small one behind it only if it still fits", async () => {
    await b.run(acquire("big", { hold: "h", limit: 2 }));
    await b.run(acquire("big", { hold: "large", permits: 2, limit: 2, ticketLease: 3_000 }));
    await b.run(acquire("big", { hold: "small", limit: 2, ticketLease: 3_000 }));
    const r = await b.run(setPermits("big", 3, "c"));
    assert.deepEqual(r.status === "set" && r.grants.map((g) => g.ticket), ["large"], "1 + 2 = 3: the small one does not fit any more");
    assert.deepEqual(await b.redis.lrange(b.shared("big", "sem").queue, 0, -1), ["small"]);
    assert.equal(await used("big"), 3);
  });

  void it("lowered: holders keep their permits; newcomers wait until usage is under the new limit", async () => {
    for (const hold of ["a", "b", "c"]) await b.run(acquire("lower", { hold, limit: 3 }));
    const r = await b.run(setPermits("lower", 1, "c1"));
    assert.deepEqual(r, { status: "set", previous: 3, grants: [] });
    assert.deepEqual((await live("lower")).sort(), ["a", "b", "c"], "nobody lost a permit");
    const newcomer = await b.run(acquire("lower", { hold: "n", limit: 3, ticketLease: 3_000 }));
    assert.equal(newcomer.status, "busy", "a caller created with 3 adopts the limit set on purpose, and waits");
    assert.deepEqual(await b.run(release("lower", "a")), { status: "freed", grants: [] }, "2 in use: still over the limit");
    assert.deepEqual(await b.run(release("lower", "b")), { status: "freed", grants: [] }, "1 in use: a permit would make 2");
    const last = await b.run(release("lower", "c"));
    assert.deepEqual(last.status === "freed" && last.grants.map((g) => g.ticket), ["n"]);
    assert.deepEqual(await live("lower"), ["n"]);
  });

  void it("lowered under a waiter's request: its ticket leaves the line and is told to attempt; the attempt is refused, the next head is served", async () => {
    const k = b.shared("under", "sem");
    await b.run(acquire("under", { hold: "h", permits: 2, limit: 3 }));
    await b.run(acquire("under", { hold: "large", permits: 3, limit: 3, ticketLease: 3_000 }));
    await b.run(acquire("under", { hold: "small", limit: 3, ticketLease: 3_000 }));
    const heard = await b.listen(k.channel);
    const r = await b.run(setPermits("under", 2, "c"));
    await eventually(() => heard.messages.length > 0, 2_000, "the turn announced");
    heard.close();
    assert.ok(r.status === "set");
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["small"], "the request of 3 left the line");
    assert.ok(heard.messages.includes("t large"), JSON.stringify(heard.messages));
    assert.deepEqual(await b.run(acquire("under", { hold: "large", permits: 3, limit: 3, ticketLease: 3_000 })), { status: "conflict", limit: 2 });
    assert.equal(await b.redis.hexists(k.tickets, "large"), 0, "refused, it does not stand again");
    // Its refresh does not put it back in line either: it is told to attempt.
    const refresh = await b.run(scripts.keepalive.call({}, {}, {
      keys: [k.state, k.holders, k.entries, k.queue, k.tickets], args: ["Q", "large", 3_000, 10_000, "o-large", "s", 3],
    }));
    assert.deepEqual(refresh, [[2]]);
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["small"]);
    const freed = await b.run(release("under", "h"));
    assert.deepEqual(freed.status === "freed" && freed.grants.map((g) => g.ticket), ["small"]);
  });

  void it("a limit set on purpose is adopted by callers created with another number; another stored limit is still a conflict", async () => {
    await b.run(acquire("adopt", { hold: "a", limit: 2 }));
    assert.deepEqual(await b.run(acquire("adopt", { hold: "b", limit: 5 })), { status: "conflict", limit: 2 });
    await b.run(setPermits("adopt", 4, "c"));
    assert.equal((await b.run(acquire("adopt", { hold: "b", limit: 5 }))).status, "founded");
    assert.equal((await b.run(acquire("adopt", { hold: "c", limit: 2 }))).status, "founded");
    assert.deepEqual(await b.run(acquire("adopt", { hold: "d", permits: 5, limit: 5 })), { status: "conflict", limit: 4 }, "more than the limit");
  });

  void it("on a semaphore Redis does not have: stores the limit (with a TTL), which the first acquisition then follows", async () => {
    const k = b.shared("fresh", "sem");
    assert.deepEqual(await b.run(setPermits("fresh", 2, "c")), { status: "set", previous: 0, grants: [] });
    assertAllExpire(await b.snapshot(sharedKeys(k)));
    assert.equal((await b.run(acquire("fresh", { hold: "a", limit: 7 }))).status, "founded");
    assert.equal((await b.run(acquire("fresh", { hold: "b", limit: 7 }))).status, "founded");
    assert.equal((await b.run(acquire("fresh", { hold: "c", limit: 7 }))).status, "busy");
  });

  void it("quorum mode (grant 0): the first head that fits is told it is its turn, nothing is founded", async () => {
    const k = b.shared("turn", "sem");
    await b.run(acquire("turn", { hold: "h", limit: 1 }));
    await b.run(acquire("turn", { hold: "w", limit: 1, ticketLease: 3_000 }));
    const heard = await b.listen(k.channel);
    const r = await b.run(setPermits("turn", 2, "c", "0"));
    await eventually(() => heard.messages.length > 0, 2_000, "the turn announced");
    heard.close();
    assert.deepEqual(r, { status: "set", previous: 1, grants: [] });
    assert.deepEqual(heard.messages, ["t w"]);
    assert.deepEqual(await live("turn"), ["h"]);
  });
});
