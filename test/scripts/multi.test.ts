/**
 * acquire-multi.lua, release-multi.lua, leave-multi.lua and keepalive.lua's 'm' items: a hold on
 * several mutexes founded all at once or not at all, never ahead of a live ticket, replayed
 * without effect, released and handed over key by key as a mutex release hands it over.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { tombstoneOf, type ExclusiveKeys } from "../../src/keys.js";
import { scripts, ticketState } from "../../src/protocol/index.js";
import { assertAllExpire, exclusiveKeys, scriptBench, type ScriptBench } from "./bench.js";

void describe("multi-key scripts", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const keysOf = (names: readonly string[]): ExclusiveKeys[] => names.map((n) => b.exclusive(n));
  const all = (names: readonly string[]): string[] => keysOf(names).flatMap(exclusiveKeys);
  /** Each key's lock, queue, tickets, channel and the tombstone `entry` leaves there. */
  const freeing = (names: readonly string[], entry: string) =>
    keysOf(names).flatMap((k) => [k.lock, k.queue, k.tickets, k.channel, tombstoneOf(k, entry)]);
  const acquire = (names: readonly string[], owner: string, hold: string, o: { entry?: string; join?: string; ticketLease?: number } = {}) =>
    scripts.acquireMulti.call({}, {
      owner, hold, entry: o.entry ?? hold, ttl: 10_000, join: o.join ?? "", ticketLease: o.ticketLease ?? 0, keep: 60_000, grant: "1", publish: "PUBLISH",
    }, { keys: freeing(names, o.entry ?? hold) });
  const release = (names: readonly string[], hold: string, entry: string, grant = "1") =>
    scripts.releaseMulti.call({}, { hold, entry, keep: 60_000, window: 10_000, grant, publish: "PUBLISH" }, { keys: freeing(names, entry) });
  const leave = (names: readonly string[], ticket: string) =>
    scripts.leaveMulti.call({}, { ticket, keep: 60_000, grant: "1", publish: "PUBLISH" }, { keys: freeing(names, ticket) });
  const mutex = (name: string, owner: string, hold: string, ticketLease = 0) => {
    const k = b.exclusive(name);
    return b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
      { owner, hold, entry: hold, ttl: 10_000, join: "", ticketLease, window: 10_000 }));
  };
  const refresh = (names: readonly string[], ticket: string) => scripts.keepalive.call({}, {}, {
    keys: keysOf(names).flatMap((k) => [k.lock, k.queue, k.tickets, tombstoneOf(k, ticket)]), args: ["m", ticket, 3_000, 10_000, "w", names.length],
  });

  void it("founds one hold on every key, with each key's own token; a replay answers the same and changes nothing", async () => {
    const names = ["f:a", "f:b", "f:c"];
    await mutex("f:b", "earlier", "e1");
    const kb = b.exclusive("f:b");
    await b.run(scripts.release.call({ lock: kb.lock, queue: kb.queue, tickets: kb.tickets, channel: kb.channel, released: kb.released },
      { hold: "e1", entry: "e1", token: "0", keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH", here: "" }));
    const before = BigInt((await b.redis.hget(b.exclusive("f:b").lock, "c")) ?? "0");
    const r = await b.replay(acquire(names, "o", "h"), all(names));
    assert.equal(r.first.status, "founded");
    if (r.first.status !== "founded") return;
    assert.equal(r.first.hold, "h");
    assert.equal(r.first.tokens.length, 3);
    assert.equal(r.first.tokens[1], before + 1n, "each key continues its own counter");
    assert.deepEqual(r.first.leaseTokens, r.first.tokens);
    // The same answer; its PTTL is what is left now, as a mutex's replay answers.
    assert.deepEqual({ ...r.second, pttlMs: 0 }, { ...r.first, pttlMs: 0 }, "the replay answers what the first run answered");
    assert.ok(r.second.status === "founded" && r.second.pttlMs <= r.first.pttlMs);
    assert.deepEqual(r.again, r.after, "and changes nothing");
    for (const k of keysOf(names)) {
      const lock = await b.redis.hgetall(k.lock);
      // One entry, the founding one (the hold's id): neither a count nor an entry field is written.
      assert.deepEqual([lock.o, lock.h, lock.n, lock["@h"]], ["o", "h", undefined, undefined]);
    }
    assertAllExpire(r.after);
  });

  void it("takes nothing while one key is held, and stands aside in every queue ('n'): a mutex takes its free key meanwhile", async () => {
    const names = ["n:a", "n:b"];
    await mutex("n:b", "holder", "hb");
    const r = await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.equal(r.status, "busy");
    assert.ok(r.status === "busy" && r.waitMs > 9_000 && r.position === 0, r.status);
    assert.equal(await b.redis.hexists(b.exclusive("n:a").lock, "o"), 0, "the free key was not taken");
    for (const k of keysOf(names)) {
      assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["t"]);
      assert.match((await b.redis.hget(k.tickets, "t")) ?? "", /^\d+\|10000\|1\|n\|o$/);
    }
    assert.equal((await mutex("n:a", "passer", "p")).status, "founded", "a set waiting for a holder holds no free key back");
    // Without a ticket lease (one attempt) nothing stands anywhere.
    const once = await b.run(acquire(["n:c", "n:b"], "o", "t2"));
    assert.equal(once.status, "busy");
    assert.deepEqual(once, { status: "busy", waitMs: once.status === "busy" ? once.waitMs : 0, position: -1, counter: 0n });
    assert.equal(await b.redis.exists(b.exclusive("n:c").queue), 0);
  });

  void it("does not jump a live ticket ahead on any key, even with every key free", async () => {
    const names = ["j:a", "j:b"];
    await mutex("j:b", "holder", "hb");
    assert.equal((await mutex("j:b", "w", "mutex-ticket", 3_000)).status, "busy");
    await b.redis.del(b.exclusive("j:b").lock); // the holder is gone; the mutex waiter is the head
    const r = await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.ok(r.status === "busy" && r.position === 1, r.status);
    assert.equal(await b.redis.hexists(b.exclusive("j:a").lock, "o"), 0);
    assert.match((await b.redis.hget(b.exclusive("j:a").tickets, "t")) ?? "", /\|m\|o$/, "waiting only for a ticket, it holds the lines");
    assert.equal((await mutex("j:a", "later", "later", 3_000)).status, "busy", "a later mutex of its free key waits behind it");
    assert.equal((await mutex("j:b", "w", "mutex-ticket", 3_000)).status, "founded", "the head takes its turn");
  });

  void it("a waiter that held the lines while a key was taken is told to attempt, stands aside, and hands its free keys on", async () => {
    const names = ["s:a", "s:b"];
    const ka = b.exclusive("s:a");
    const listener = await b.listen(ka.channel);
    await mutex("s:b", "holder", "hb");
    await mutex("s:b", "w", "w", 3_000);
    await b.redis.del(b.exclusive("s:b").lock);
    await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.equal((await mutex("s:a", "later", "later", 3_000)).status, "busy");
    assert.equal((await mutex("s:b", "w", "w", 3_000)).status, "founded", "the ticket ahead takes s:b");
    assert.deepEqual((await b.run(refresh(names, "t"))).map(ticketState), [{ status: "turn" }], "its lines are held for nothing now");
    const r = await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.equal(r.status, "busy");
    assert.match((await b.redis.hget(ka.tickets, "t")) ?? "", /\|n\|o$/, "it stands aside");
    assert.equal(await b.redis.hget(ka.lock, "h"), "later", "s:a went to the mutex waiter it held back");
    await b.redis.ping();
    assert.match(listener.messages.join(","), /^g later \d+ \d+$/, "granted, and nobody told to attempt for nothing");
    assert.deepEqual((await b.run(refresh(names, "t"))).map(ticketState), [{ status: "queued", position: 0, counter: 0n }]);
    listener.close();
  });

  void it("a re-entry adds an entry on every key; releases give back one entry at a time, replays change nothing", async () => {
    const names = ["r:a", "r:b"];
    await b.run(acquire(names, "o", "h"));
    const entered = await b.run(acquire(names, "o", "x", { entry: "e2", join: "h" }));
    assert.equal(entered.status, "entered");
    assert.deepEqual(await b.run(acquire(names, "o", "x", { entry: "e3", join: "gone" })), { status: "gone" });
    const inner = await b.replay(release(names, "h", "e2"), all(names));
    assert.deepEqual(inner.first, { status: "held", entries: 1 });
    assert.deepEqual(inner.second, { status: "released" }, "the replay finds the tombstones");
    assert.deepEqual(inner.again, inner.after);
    const outer = await b.run(release(names, "h", "h"));
    assert.deepEqual(outer, { status: "freed", grants: [] });
    for (const k of keysOf(names)) assert.deepEqual(Object.keys(await b.redis.hgetall(k.lock)), ["c", "b"]);
    assert.deepEqual(await b.run(release(names, "h", "h")), { status: "released" });
    assertAllExpire(await b.snapshot([...all(names), ...keysOf(names).flatMap((k) => [tombstoneOf(k, "h"), tombstoneOf(k, "e2")])]));
  });

  void it("the release hands each key to its head: a mutex waiter is granted, a multi-key waiter told its turn", async () => {
    const names = ["h:a", "h:b"];
    const [ka, kb] = keysOf(names) as [ExclusiveKeys, ExclusiveKeys];
    const la = await b.listen(ka.channel);
    const lb = await b.listen(kb.channel);
    await b.run(acquire(names, "o", "h"));
    await mutex("h:a", "w", "mutex-waiter", 3_000);
    assert.equal((await b.run(acquire(["h:b", "h:c"], "m", "multi-waiter", { ticketLease: 3_000 }))).status, "busy");
    const r = await b.run(release(names, "h", "h"));
    assert.equal(r.status, "freed");
    assert.deepEqual(r.status === "freed" && r.grants.map((g) => g.ticket), ["mutex-waiter"]);
    assert.equal(await b.redis.hget(ka.lock, "h"), "mutex-waiter");
    assert.equal(await b.redis.hexists(kb.lock, "o"), 0, "the multi-key waiter is not granted one key alone");
    await b.redis.ping();
    assert.match(la.messages[0] ?? "", /^g mutex-waiter \d+ \d+$/);
    assert.deepEqual(lb.messages, ["t multi-waiter"]);
    const turn = await b.run(acquire(["h:b", "h:c"], "m", "multi-waiter", { ticketLease: 3_000 }));
    assert.equal(turn.status, "founded", "its attempt takes both");
    assert.equal(await b.redis.llen(kb.queue), 0);
    la.close();
    lb.close();
  });

  void it("a mutex release passes over a set that stands aside: it grants the mutex waiter behind it and tells the set its turn", async () => {
    const names = ["mt:a", "mt:b"];
    const ka = b.exclusive("mt:a");
    const listener = await b.listen(ka.channel);
    const held = await mutex("mt:a", "holder", "ha");
    assert.equal(held.status, "founded");
    await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.equal((await mutex("mt:a", "w", "behind", 3_000)).status, "busy");
    assert.deepEqual(await b.redis.lrange(ka.queue, 0, -1), ["t", "behind"]);
    const r = await b.run(scripts.release.call({ lock: ka.lock, queue: ka.queue, tickets: ka.tickets, channel: ka.channel, released: ka.released },
      { hold: "ha", entry: "ha", token: "0", keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH", here: "" }));
    assert.deepEqual(r.status === "freed" && r.grants.map((g) => g.ticket), ["behind"]);
    assert.equal(await b.redis.hget(ka.lock, "h"), "behind");
    assert.deepEqual(await b.redis.lrange(ka.queue, 0, -1), ["t"], "the set keeps its place");
    await b.redis.ping();
    assert.equal(listener.messages[0], "t t");
    assert.match(listener.messages[1] ?? "", /^g behind \d+ \d+$/);
    listener.close();
  });

  void it("leaving gives back a hold founded for the ticket, leaves every queue, and serves the next head", async () => {
    const names = ["l:a", "l:b"];
    const [ka, kb] = keysOf(names) as [ExclusiveKeys, ExclusiveKeys];
    // It holds the lines (waiting only for the mutex ticket ahead of it on l:b), so l:a's waiter is behind it.
    await mutex("l:b", "holder", "hb");
    await mutex("l:b", "w", "ahead", 3_000);
    await b.redis.del(kb.lock);
    await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.equal((await mutex("l:a", "w", "behind", 3_000)).status, "busy");
    const r = await b.replay(leave(names, "t"), all(names));
    assert.equal(r.first, 1);
    assert.equal(r.second, 0, "running it again finds it nowhere");
    assert.deepEqual(r.again, r.after);
    assert.equal(await b.redis.hget(ka.lock, "h"), "behind", "the free key went to the waiter behind it");
    assert.equal(await b.redis.hget(kb.lock, "h"), "ahead", "and l:b to the one ahead of it, whose turn it was");
    assert.deepEqual(await b.redis.lrange(kb.queue, 0, -1), []);
    await b.run(acquire(["l:c", "l:d"], "o", "lost"));
    assert.equal(await b.run(leave(["l:c", "l:d"], "lost")), 2, "an attempt whose answer was lost is given back");
    for (const k of keysOf(["l:c", "l:d"])) assert.equal(await b.redis.hexists(k.lock, "o"), 0);
  });

  void it("a refresh that arrives after the set's hold was founded and released does not stand again", async () => {
    // A late refresh would put the set's ticket back in every queue: a ghost the next release
    // tells its turn and every tryAcquire waits behind, for a ticket lease.
    const names = ["late:a", "late:b"];
    assert.equal((await b.run(acquire(names, "w", "set-1", { ticketLease: 3_000 }))).status, "founded");
    await b.run(release(names, "set-1", "set-1"));
    assert.deepEqual(ticketState((await b.run(refresh(names, "set-1")))[0]), { status: "done" });
    for (const k of keysOf(names)) assert.equal(await b.redis.llen(k.queue), 0, `nobody in line for ${k.key}`);
    assert.equal((await mutex("late:a", "someone", "m1")).status, "founded", "the free key goes to the next caller at once");
  });

  void it("a refresh says when it is its turn, and a ticket that lapsed anywhere stands again at the back of every queue", async () => {
    const names = ["q:a", "q:b"];
    const [ka, kb] = keysOf(names) as [ExclusiveKeys, ExclusiveKeys];
    await mutex("q:b", "holder", "hb");
    await b.run(acquire(names, "o", "t", { ticketLease: 3_000 }));
    assert.deepEqual((await b.run(refresh(names, "t"))).map(ticketState), [{ status: "queued", position: 0, counter: 0n }]);
    // Someone else stands behind it on both keys; then its registration lapses on key a.
    await b.run(acquire(names, "o2", "t2", { ticketLease: 3_000 }));
    await b.redis.hdel(ka.tickets, "t");
    await b.redis.lrem(ka.queue, 1, "t");
    assert.deepEqual((await b.run(refresh(names, "t"))).map(ticketState), [{ status: "queued", position: 1, counter: 0n }]);
    assert.deepEqual(await b.redis.lrange(ka.queue, 0, -1), ["t2", "t"]);
    assert.deepEqual(await b.redis.lrange(kb.queue, 0, -1), ["t2", "t"], "one order on every key");
    await b.redis.del(kb.lock);
    assert.deepEqual((await b.run(refresh(names, "t2"))).map(ticketState), [{ status: "turn" }]);
    await b.run(acquire(names, "o2", "t2", { ticketLease: 3_000 }));
    assert.deepEqual((await b.run(refresh(names, "t"))).map(ticketState), [{ status: "queued", position: 0, counter: 0n }]);
  });
});
