/**
 * Quorum mode's ordered line: acquire.lua with an order places a ticket by it (not at the back),
 * founds at once when that place is the head of a free lock; step-aside.lua gives back a lone
 * hold and keeps the ticket in its place; a replay changes nothing but the ticket's deadline.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { tombstoneOf } from "../../src/keys.js";
import { exclusiveKeys, scriptBench, type ScriptBench } from "./bench.js";

void describe("quorum mode's ordered line (acquire.lua with an order, step-aside.lua)", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const acquire = (key: string, hold: string, order?: number, ticketLease = 3_000) => {
    const k = b.exclusive(key);
    return b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
      { owner: `o-${hold}`, hold, entry: hold, ttl: 10_000, join: "", ticketLease, window: 10_000 }, order === undefined ? undefined : { args: [order] }));
  };
  const stepAside = (key: string, ticket: string, order: number) => {
    const k = b.exclusive(key);
    return scripts.stepAside.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { ticket, order, ticketLease: 3_000, ttl: 10_000, owner: `o-${ticket}`, keep: 60_000, publish: "PUBLISH" });
  };
  const line = (key: string) => b.redis.lrange(b.exclusive(key).queue, 0, -1);

  void it("places tickets by their order whatever order they arrive in; equal orders by ticket id", async () => {
    await acquire("order", "holder");
    assert.equal((await acquire("order", "t3", 300)).status, "busy");
    assert.equal((await acquire("order", "t1", 100)).status, "busy");
    assert.equal((await acquire("order", "t2b", 200)).status, "busy");
    assert.equal((await acquire("order", "t2a", 200)).status, "busy");
    const again = await acquire("order", "t1", 100);
    assert.ok(again.status === "busy");
    assert.equal(again.position, 0, "a refresh keeps its place");
    assert.deepEqual(await line("order"), ["t1", "t2a", "t2b", "t3"]);
    assert.equal(await b.redis.hget(b.exclusive("order").tickets, "<t1"), "100");
  });

  void it("founds at once when its place is the head of a free lock; a ticket without an order stays ahead", async () => {
    const k = b.exclusive("head");
    await acquire("head", "holder");
    await acquire("head", "late", 500);
    await b.redis.del(k.lock); // the holder released here; "late" has not attempted yet
    // An earlier waiter takes its place ahead of "late", at the head of a free lock, and founds.
    const r = await acquire("head", "early", 100);
    assert.equal(r.status, "founded");
    assert.deepEqual(await line("head"), ["late"]);
    assert.equal(await b.redis.hexists(k.tickets, "<early"), 0, "its order went with its ticket");
    await b.redis.del(k.lock, k.queue, k.tickets);
    await acquire("head", "holder2");
    await acquire("head", "plain"); // no order (as single-node mode stands)
    await b.redis.del(k.lock);
    assert.equal((await acquire("head", "first", 1)).status, "busy", "a ticket without an order stays ahead of ordered ones");
    assert.deepEqual(await line("head"), ["plain", "first"]);
  });

  void it("step-aside gives back a lone hold and keeps the ticket at its place; a replay changes nothing", async () => {
    const k = b.exclusive("aside");
    await acquire("aside", "holder");
    await acquire("aside", "w2", 200);
    await b.redis.del(k.lock); // the holder released here
    const won = await acquire("aside", "w1", 100);
    assert.equal(won.status, "founded");
    const r = await b.replay(stepAside("aside", "w1", 100), exclusiveKeys(k));
    assert.equal(r.first, 2);
    assert.equal(r.second, 1);
    assert.equal(await b.redis.hexists(k.lock, "o"), 0, "the lone hold went back");
    assert.deepEqual(await line("aside"), ["w1", "w2"], "its ticket is back at its place, the head");
    // Its next attempt founds again.
    assert.equal((await acquire("aside", "w1", 100)).status, "founded");
  });

  void it("step-aside where the ticket stood nowhere puts it at its place", async () => {
    await acquire("nowhere", "holder");
    await acquire("nowhere", "w3", 300);
    assert.equal(await b.run(stepAside("nowhere", "w1", 100)), 1);
    assert.deepEqual(await line("nowhere"), ["w1", "w3"]);
  });

  void it("a keepalive refresh of an ordered ticket ('o') refreshes it where it stands and never puts it back", async () => {
    const k = b.exclusive("refresh");
    const refresh = (ticket: string) => b.run(scripts.keepalive.call({}, {}, {
      keys: [k.lock, k.queue, k.tickets, tombstoneOf(k, ticket)], args: ["o", ticket, 3_000, 10_000, `o-${ticket}`],
    }));
    await acquire("refresh", "holder");
    await acquire("refresh", "w1", 100);
    assert.deepEqual(await refresh("w1"), [[0, 0, Number(await b.redis.hget(k.lock, "c"))]]);
    await b.redis.lrem(k.queue, 1, "w1");
    await b.redis.hdel(k.tickets, "w1", "<w1");
    // Gone (its waiter won, and the refresh crossed the win): it stays gone.
    assert.deepEqual(await refresh("w1"), [[0, -1, Number(await b.redis.hget(k.lock, "c"))]]);
    assert.deepEqual(await line("refresh"), []);
  });

  void it("leave-queue takes the ticket's order with it", async () => {
    const k = b.exclusive("leave");
    await acquire("leave", "holder");
    await acquire("leave", "w1", 100);
    assert.equal(await b.run(scripts.leaveQueue.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { ticket: "w1", keep: 60_000, grant: "0", publish: "PUBLISH" })), 1);
    assert.equal(await b.redis.exists(k.tickets), 0);
  });
});
