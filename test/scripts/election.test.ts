/** proclaim.lua, read-leader.lua, inspect-coordination.lua: an election's leader stores its value; everyone reads who leads. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KeySpace } from "../../src/keys.js";
import { scripts } from "../../src/protocol/index.js";
import { within } from "../helpers/fixtures.js";
import { assertAllExpire, exclusiveKeys, scriptBench, type ScriptBench } from "./bench.js";

void describe("proclaim.lua, read-leader.lua, inspect-coordination.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const space = new KeySpace("t");
  const keys = (name: string) => space.exclusive(name, "election");
  const found = async (name: string, owner: string, hold: string): Promise<bigint> => {
    const k = keys(name);
    const r = await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
      { owner, hold, entry: hold, ttl: 10_000, join: "", ticketLease: 0, window: 10_000 }));
    assert.ok(r.status === "founded");
    return r.token;
  };
  /** Each hold's proclaims are numbered 1, 2, ... as a leader numbers them; `seq` sends another number. */
  const sent = new Map<string, number>();
  const proclaim = (name: string, hold: string, token: bigint, value: string | null, seq?: number, kept = true) => {
    const k = keys(name);
    const n = seq ?? (sent.get(`${name}/${hold}`) ?? 0) + 1;
    if (seq === undefined) sent.set(`${name}/${hold}`, n);
    return scripts.proclaim.call({ lock: k.lock, channel: k.channel },
      { hold, token: token.toString(), value: value ?? "", has: value === null ? "0" : "1", publish: "PUBLISH", seq: String(n),
        kept: kept ? "1" : "0" });
  };
  const read = (name: string) => b.run(scripts.readLeader.call({ lock: keys(name).lock }, {}));
  /** The next `count` messages on `channel`, or a failure after a deadline. */
  const messages = async (channel: string, count: number): Promise<{ received: Promise<string[]>; close(): void }> => {
    const sub = b.redis.duplicate();
    const got: string[] = [];
    let done: (value: string[]) => void = () => {};
    const received = new Promise<string[]>((resolve) => { done = resolve; });
    sub.on("message", (_: string, message: string) => {
      got.push(message);
      if (got.length === count) done(got);
    });
    await sub.subscribe(channel);
    return { received: within(2_000, received, `${count} messages on ${channel}`), close: () => sub.disconnect() };
  };

  void it("the holding hold stores its value with its hold id and token, keeps the hash's PTTL, and announces 'e'; a replay changes nothing more", async () => {
    const token = await found("stored", "o1", "h1");
    const k = keys("stored");
    const heard = await messages(k.channel, 2);
    const r = await b.replay(proclaim("stored", "h1", token, "10.0.0.7:8080"), exclusiveKeys(k));
    assert.equal(r.first, "held");
    assert.equal(r.second, "held");
    assert.deepEqual(r.again, r.after);
    const lock = await b.redis.hgetall(k.lock);
    assert.deepEqual([lock.v, lock.vh, lock.vt], ["10.0.0.7:8080", "h1", token.toString()]);
    assertAllExpire(r.again);
    assert.deepEqual(await heard.received, ["e", "e"]);
    heard.close();
  });

  void it("another hold, or none, writes nothing: -1 taken, 0 gone (no key is made)", async () => {
    const token = await found("guarded", "o1", "h1");
    const k = keys("guarded");
    const before = await b.snapshot(exclusiveKeys(k));
    assert.equal(await b.run(proclaim("guarded", "stale-hold", token - 1n, "old")), "taken");
    assert.deepEqual(await b.snapshot(exclusiveKeys(k)), before);
    assert.equal(await b.run(proclaim("nobody", "h", 5n, "x")), "gone");
    assert.equal(await b.redis.exists(keys("nobody").lock), 0);
  });

  void it("read-leader: nothing while free; a hold not yet proclaimed shows its own token and no value; then the proclaimed token and value", async () => {
    assert.equal(await read("reading"), null);
    const token = await found("reading", "o1", "h1");
    const unproclaimed = await read("reading");
    assert.deepEqual({ ...unproclaimed, pttlMs: 0 }, { owner: "o1", hold: "h1", token, pttlMs: 0, proclaimed: false, value: null, seq: 0 });
    // In quorum mode the proclaimed token (the lease's) may be above this node's own.
    await b.run(proclaim("reading", "h1", token + 7n, "v1"));
    const proclaimed = await read("reading");
    assert.ok(proclaimed && proclaimed.pttlMs > 9_000 && proclaimed.pttlMs <= 10_000);
    assert.deepEqual({ ...proclaimed, pttlMs: 0 }, {
      owner: "o1", hold: "h1", token: token + 7n, pttlMs: 0, proclaimed: true, value: "v1", seq: 1, kept: { seq: 1, value: "v1" },
    });
    // No value, but proclaimed; and an empty string is a value.
    await b.run(proclaim("reading", "h1", token, null));
    assert.deepEqual(await read("reading").then((l) => [l?.proclaimed, l?.value]), [true, null]);
    await b.run(proclaim("reading", "h1", token, ""));
    assert.deepEqual(await read("reading").then((l) => [l?.proclaimed, l?.value]), [true, ""]);
    const k = keys("reading");
    const before = await b.snapshot(exclusiveKeys(k));
    await read("reading");
    assert.deepEqual(await b.snapshot(exclusiveKeys(k)), before, "read-only");
  });

  void it("a proclaim older than the one a node shows changes nothing there (a late or resent one in quorum mode); a newer one replaces it", async () => {
    const token = await found("ordered", "o1", "h1");
    await b.run(proclaim("ordered", "h1", token, "third", 3));
    const k = keys("ordered");
    const before = await b.snapshot(exclusiveKeys(k));
    assert.equal(await b.run(proclaim("ordered", "h1", token, "second", 2)), "held");
    assert.deepEqual(await b.snapshot(exclusiveKeys(k)), before);
    assert.deepEqual(await read("ordered").then((l) => [l?.value, l?.seq]), ["third", 3]);
    await b.run(proclaim("ordered", "h1", token, null, 4));
    assert.deepEqual(await read("ordered").then((l) => [l?.proclaimed, l?.value, l?.seq]), [true, null, 4]);
  });

  void it("a proclaim not yet kept is stored silently and named by nobody; kept, it is announced; an older kept one still counts, a new hold starts with none", async () => {
    const token = await found("kept", "o1", "h1");
    const k = keys("kept");
    // Proclaims 1, 2 (its late kept round) and 3, as each is kept; nothing else.
    const heard = await messages(k.channel, 3);
    try {
      await b.run(proclaim("kept", "h1", token, "one", 1));
      // Stored on this node (in quorum mode a majority is not known yet): kept 1 stays the one named.
      await b.run(proclaim("kept", "h1", token, "two", 2, false));
      assert.deepEqual(await read("kept").then((l) => [l?.value, l?.seq, l?.kept]), ["two", 2, { seq: 1, value: "one" }]);
      // Proclaim 3 overtook it; proclaim 2's kept round comes late: it is kept all the same.
      await b.run(proclaim("kept", "h1", token, null, 3, false));
      await b.run(proclaim("kept", "h1", token, "two", 2, true));
      assert.deepEqual(await read("kept").then((l) => [l?.value, l?.seq, l?.kept]), [null, 3, { seq: 2, value: "two" }]);
      // ... but never over a newer kept one.
      await b.run(proclaim("kept", "h1", token, null, 3, true));
      const before = await b.snapshot(exclusiveKeys(k));
      await b.run(proclaim("kept", "h1", token, "two", 2, true));
      assert.deepEqual(await b.snapshot(exclusiveKeys(k)), before);
      assert.deepEqual(await heard.received, ["e", "e", "e"]);
    } finally {
      heard.close();
    }
    // The next hold of the lock shows nothing kept of the first, though the hash keeps its fields.
    await b.run(scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold: "h1", entry: "h1", token: token.toString(), keep: 60_000, window: 10_000, grant: "0", publish: "PUBLISH", here: "" }));
    const t2 = await found("kept", "o2", "h2");
    await b.run(proclaim("kept", "h2", t2, "mine", 1, false));
    assert.deepEqual(await read("kept").then((l) => [l?.hold, l?.value, l?.kept]), ["h2", "mine", undefined]);
  });

  void it("inspect-coordination: the election's holder, value and live candidates, and the latch of that name, read-only", async () => {
    const k = keys("seen");
    const latch = space.latch("seen").state;
    const inspect = () => b.run(scripts.inspectCoordination.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, latch }, {})) as Promise<{
      election: { holder: { owner: string; hold: string; proclaimed: boolean; fencingToken: string; value: string | null; pttlMs: number } | null; candidates: { owner: string }[] } | null;
      latch: { count: number; left: number; pttlMs: number } | null;
    }>;
    assert.deepEqual(await inspect(), { election: null, latch: null });
    const token = await found("seen", "o1", "h1");
    const unproclaimed = (await inspect()).election?.holder;
    assert.ok(unproclaimed && unproclaimed.pttlMs > 9_000);
    assert.deepEqual({ ...unproclaimed, pttlMs: 0 }, { owner: "o1", hold: "h1", proclaimed: false, fencingToken: token.toString(), value: null, pttlMs: 0 });
    await b.run(proclaim("seen", "h1", token, "v"));
    await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, { owner: "o2", hold: "t2", entry: "t2", ttl: 10_000, join: "", ticketLease: 3_000, window: 10_000 }));
    await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, { owner: "o3", hold: "t3", entry: "t3", ttl: 10_000, join: "", ticketLease: 60, window: 10_000 }));
    await b.run(scripts.countDown.call({ latch, channel: space.latch("seen").channel }, { id: "a", count: 4, ttl: 60_000, publish: "PUBLISH" }));
    // The second candidate's ticket lapses on the server's clock; proven by waiting past it.
    await new Promise((r) => setTimeout(r, 80));
    const before = await b.snapshot([...exclusiveKeys(k), latch]);
    const doc = await inspect();
    assert.deepEqual([doc.election?.holder?.proclaimed, doc.election?.holder?.value, doc.election?.holder?.fencingToken], [true, "v", token.toString()]);
    assert.deepEqual(doc.election?.candidates.map((c) => c.owner), ["o2"], "live candidates only");
    assert.deepEqual([doc.latch?.count, doc.latch?.left], [4, 3]);
    assert.deepEqual(await b.snapshot([...exclusiveKeys(k), latch]), before, "read-only");
  });

  void it("the next hold never shows the previous leader's value", async () => {
    const k = keys("succession");
    const first = await found("succession", "o1", "h1");
    await b.run(proclaim("succession", "h1", first, "first's"));
    const freed = await b.run(scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold: "h1", entry: "h1", token: first.toString(), keep: 60_000, window: 1_000, grant: "1", publish: "PUBLISH", here: "" }));
    assert.equal(freed.status, "freed");
    assert.equal(await read("succession"), null);
    const second = await found("succession", "o2", "h2");
    const next = await read("succession");
    assert.deepEqual([next?.owner, next?.proclaimed, next?.value, next?.token], ["o2", false, null, second]);
  });
});
