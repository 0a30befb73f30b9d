/** check.lua, raise-fence.lua, inspect.lua and force-release.lua. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { scripts } from "../../src/protocol/index.js";
import { scriptBench, type ScriptBench } from "./bench.js";

void describe("check.lua, raise-fence.lua, inspect.lua, force-release.lua", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  const found = async (key: string, owner: string, hold: string) => {
    const k = b.exclusive(key);
    const r = await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, { owner, hold, entry: hold, ttl: 10_000, join: "", ticketLease: 0, window: 10_000 }));
    assert.ok(r.status === "founded");
    return r.token;
  };

  void it("check.lua reads a hold's state and changes nothing", async () => {
    await found("chk", "o", "h");
    const k = b.exclusive("chk");
    const before = await b.snapshot([k.lock]);
    assert.equal(await b.run(scripts.check.call({ key: k.lock }, { kind: "x", hold: "h" })), "held");
    assert.equal(await b.run(scripts.check.call({ key: k.lock }, { kind: "x", hold: "zz" })), "taken");
    assert.equal(await b.run(scripts.check.call({ key: b.exclusive("none").lock }, { kind: "x", hold: "h" })), "gone");
    assert.deepEqual(await b.snapshot([k.lock]), before);
  });

  void it("raise-fence.lua raises the counter and records the chosen token beside the hold, never rewriting the hold's own", async () => {
    const token = await found("raise", "o", "h");
    const k = b.exclusive("raise");
    const raise = (chosen: bigint, hold = "h") =>
      scripts.raiseFence.call({ hash: k.lock }, { chosen: chosen.toString(), keep: 60_000, kind: "x", hold });
    await b.run(raise(token + 10n));
    assert.equal(await b.redis.hget(k.lock, "c"), (token + 10n).toString());
    assert.equal(await b.redis.hget(k.lock, "t"), token.toString(), "the live hold keeps its own token");
    assert.equal(await b.redis.hget(k.lock, "l"), (token + 10n).toString(), "the lease token is recorded beside it");
    await b.run(raise(token + 5n));
    assert.equal(await b.redis.hget(k.lock, "c"), (token + 10n).toString(), "never lowered");
    await b.run(raise(token + 20n, "another hold"));
    assert.equal(await b.redis.hget(k.lock, "l"), (token + 5n).toString(), "a token chosen for another hold is not recorded on this one");
    const created = b.exclusive("raise-new");
    await b.run(scripts.raiseFence.call({ hash: created.lock }, { chosen: "42", keep: 60_000, kind: "x", hold: "h" }));
    assert.deepEqual(await b.redis.hgetall(created.lock), { c: "42", b: "42" }, "a counter born here, its epoch starting at 42");
    assert.ok((await b.redis.pttl(created.lock)) > 0);
  });

  void it("a process joining a hold by owner reads the lease token raise-fence recorded, until the hold ends", async () => {
    const token = await found("joined", "o", "h");
    const k = b.exclusive("joined");
    await b.run(scripts.raiseFence.call({ hash: k.lock }, { chosen: (token + 7n).toString(), keep: 60_000, kind: "x", hold: "h" }));
    const joined = await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
      { owner: "o", hold: "h2", entry: "e2", ttl: 10_000, join: "*", ticketLease: 0, window: 10_000 }));
    assert.deepEqual(joined.status === "entered" && [joined.hold, joined.token, joined.leaseToken], ["h", token, token + 7n]);
    for (const [hold, entry] of [["h", "e2"], ["h", "h"]] as const) {
      await b.run(scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
        { hold, entry, token: token.toString(), keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH", here: "" }));
    }
    assert.equal(await b.redis.hexists(k.lock, "l"), 0, "the hold's lease token goes with it");
  });

  void it("force-release.lua ends the hold for good: the forced-out holder's release answers gone, not released", async () => {
    const token = await found("forced", "o", "h");
    const k = b.exclusive("forced");
    const doc = await b.run(scripts.forceRelease.call({ state: k.lock, holders: k.lock, entries: k.lock, channel: k.channel }, { kind: "x", publish: "PUBLISH" }));
    assert.deepEqual(doc, { holds: [{ owner: "o", fencingToken: token.toString(), entries: 1 }] });
    const release = await b.run(scripts.release.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
      { hold: "h", entry: "h", token: token.toString(), keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH", here: "" }));
    assert.deepEqual(release, { status: "gone" });
  });

  void it("inspect.lua reports holders and live tickets, tokens as text", async () => {
    const token = await found("seen", "o", "h");
    const k = b.exclusive("seen");
    await b.run(scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets }, { owner: "w", hold: "t1", entry: "t1", ttl: 10_000, join: "", ticketLease: 3_000, window: 10_000 }));
    const rw = b.shared("seen", "rw");
    const sem = b.shared("seen", "sem");
    const doc = await b.run(scripts.inspect.call({
      lock: k.lock, queue: k.queue, tickets: k.tickets,
      rwState: rw.state, rwHolders: rw.holders, rwQueue: rw.queue, rwTickets: rw.tickets,
      semState: sem.state, semHolders: sem.holders, semQueue: sem.queue, semTickets: sem.tickets,
    }, {})) as { mutex: { holder: { owner: string; fencingToken: string; entries: number }; queue: { ticket: string }[] }; rw: unknown; semaphore: unknown };
    assert.equal(doc.mutex.holder.owner, "o");
    assert.equal(doc.mutex.holder.fencingToken, token.toString());
    assert.deepEqual(doc.mutex.queue.map((t) => t.ticket), ["t1"]);
    assert.equal(doc.rw, null);
    assert.equal(doc.semaphore, null);
  });
});
