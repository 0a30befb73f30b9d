import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { acquireArgs, acquireKeys, scriptBench, type ScriptBench } from "./script-harness.js";

describe("acquire.lua's queue and leave-queue.lua", () => {
  let s: ScriptBench;
  before(async () => { s = await scriptBench(); });
  after(() => s.close());
  beforeEach(() => s.redis.flushall());
  const k = () => s.keys("k");
  const take = (owner: string, ticket: string, opts: { leaseMs?: number; requeue?: boolean } = {}) =>
    s.run("acquire", acquireKeys(k()), acquireArgs(owner, 10_000, { ticket, ...opts })) as Promise<number[]>;
  const release = (owner: string, token: number) => s.run("release", [k().lock, k().channel, k().queue], [owner, String(token), "PUBLISH"]);

  it("waiters queue in arrival order and a free lock goes only to the head", async () => {
    const [, t0] = await take("holder", "t0");
    assert.equal((await take("b", "tb"))[0], 0);
    assert.equal((await take("c", "tc"))[0], 0);
    assert.deepEqual(await s.redis.lrange(k().queue, 0, -1), ["tb", "tc"]);
    await release("holder", t0!);
    assert.equal((await take("c", "tc"))[0], 0, "c is not the head: it keeps waiting");
    assert.equal((await take("x", "")).at(0), 0, "a caller without a ticket cannot barge past the queue");
    assert.equal((await take("b", "tb"))[0], 1, "the head takes it");
    assert.deepEqual(await s.redis.lrange(k().queue, 0, -1), ["tc"]);
    assert.ok((await s.redis.pttl(k().queue)) > 0 && (await s.redis.pttl(k().deadlines)) > 0, "queue keys expire");
  });

  it("a ticket taken with requeue goes to the back of the queue: processes take turns", async () => {
    const [, t0] = await take("holder", "p1", { requeue: true });
    await take("q", "p2");
    assert.deepEqual(await s.redis.lrange(k().queue, 0, -1), ["p1", "p2"]);
    await release("holder", t0!);
    assert.equal((await take("q", "p2"))[0], 0, "p1 is at the head");
    const [code, t1] = await take("next-in-p1", "p1", { requeue: true });
    assert.equal(code, 1);
    assert.deepEqual(await s.redis.lrange(k().queue, 0, -1), ["p2", "p1"], "p1 keeps a place, behind p2");
    await release("next-in-p1", t1!);
    assert.equal((await take("q", "p2"))[0], 1);
  });

  it("the release announces the queue's head (or * when nobody is queued)", async () => {
    const sub = s.redis.duplicate();
    await sub.subscribe(k().channel);
    const messages: string[] = [];
    sub.on("message", (_c: string, m: string) => messages.push(m));
    const [, t0] = await take("holder", "t0");
    await take("b", "tb");
    await release("holder", t0!);
    const [, t1] = await take("b", "tb");
    await release("b", t1!);
    while (messages.length < 2) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(messages, ["tb", "*"]);
    sub.disconnect();
  });

  it("a head that stopped refreshing is dropped once its lease passed", async () => {
    const [, t0] = await take("holder", "t0");
    await take("gone", "tgone", { leaseMs: 50 });
    await take("c", "tc");
    await release("holder", t0!);
    await new Promise((r) => setTimeout(r, 80)); // the vanished waiter's ticket lapses on the server clock
    assert.equal((await take("c", "tc"))[0], 1);
  });

  it("leave-queue removes a ticket and tells the next waiter when the head leaves a free lock", async () => {
    const [, t0] = await take("holder", "t0");
    await take("b", "tb");
    await take("c", "tc");
    await release("holder", t0!);
    const sub = s.redis.duplicate();
    await sub.subscribe(k().channel);
    const told = new Promise<string>((resolve) => sub.once("message", (_c: string, m: string) => resolve(m)));
    assert.equal(await s.run("leaveQueue", [k().lock, k().queue, k().deadlines, k().channel], ["tb", "PUBLISH"]), 1);
    assert.equal(await told, "tc");
    assert.deepEqual(await s.redis.lrange(k().queue, 0, -1), ["tc"]);
    assert.equal(await s.redis.zscore(k().deadlines, "tb"), null);
    sub.disconnect();
  });
});
