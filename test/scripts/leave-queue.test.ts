/** leave-queue.lua: a departed waiter neither stands in line nor holds the lock; twice changes nothing more. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { exclusiveKeys, scriptBench, type ScriptBench } from "./bench.js";

void describe("leave-queue.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const acquire = (key: string, owner: string, hold: string, ticketLease = 3_000) => {
    const k = b.exclusive(key);
    return b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, { owner, hold, entry: hold, ttl: 10_000, join: "", ticketLease, window: 10_000 }));
  };
  const leave = (key: string, ticket: string) => {
    const k = b.exclusive(key);
    return scripts.leaveQueue.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel }, { ticket, keep: 60_000, grant: "1", publish: "PUBLISH" });
  };

  void it("takes the ticket out of line; a replay changes nothing", async () => {
    const k = b.exclusive("line");
    await acquire("line", "holder", "h", 0);
    await acquire("line", "w1", "t1");
    await acquire("line", "w2", "t2");
    const r = await b.replay(leave("line", "t1"), exclusiveKeys(k));
    assert.equal(r.first, 1);
    assert.equal(r.second, 0);
    assert.deepEqual(r.again, r.after);
    assert.deepEqual(await b.redis.lrange(k.queue, 0, -1), ["t2"]);
    assert.equal(await b.redis.hexists(k.tickets, "t1"), 0);
  });

  void it("gives back a grant that crossed the waiter's departure, and hands it to the next head", async () => {
    const k = b.exclusive("crossed");
    const held = await acquire("crossed", "holder", "h", 0);
    await acquire("crossed", "w1", "t1");
    await acquire("crossed", "w2", "t2");
    assert.ok(held.status === "founded");
    await b.run(scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold: "h", entry: "h", token: held.token.toString(), keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH", here: "" }));
    assert.equal(await b.redis.hget(k.lock, "h"), "t1", "granted to the waiter that is leaving");
    assert.equal(await b.run(leave("crossed", "t1")), 2);
    assert.equal(await b.redis.hget(k.lock, "h"), "t2", "handed on to the next head");
    assert.equal(await b.run(leave("crossed", "t1")), 0);
    assert.equal(await b.redis.hget(k.lock, "h"), "t2");
  });

  void it("a waiter whose own attempt founded the hold (its answer lost) gives it back", async () => {
    const k = b.exclusive("lost-answer");
    await acquire("lost-answer", "w", "mine", 0);
    assert.equal(await b.run(leave("lost-answer", "mine")), 2);
    assert.equal(await b.redis.hexists(k.lock, "o"), 0);
  });
});
