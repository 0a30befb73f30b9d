/**
 * Interleavings the torture suite found (test/torture/regressions.json) that no other test forced
 * on its own, each held open here on the in-memory double and its virtual clock: the same steps,
 * in the same order, on every run. The seed that found each one is in its name.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { QuorumError, Surelock, type Lease } from "../../src/index.js";
import { LUA } from "../../src/scripts/lua.generated.js";
import { Gate, MemoryRedis, VirtualClock } from "../../src/testing/index.js";
import { World, Wire, later, watchLoss, type Proc } from "./support.js";

describe("fast: interleavings the torture suite found", () => {
  let w: World;
  let p: Proc;
  beforeEach(async () => { w = await World.create(); p = w.proc(); });
  afterEach(async () => { await w.close(); });

  const queueOf = async (key: string): Promise<string[]> =>
    (await w.observer.command(["LRANGE", `surelock:rw:{${key}}:queue`, 0, -1])) as string[];

  it("a read nested in a write section while a reader of the same instance, in another flow, waits in line for that writer: the nested read is let in at once (seed 25)", async () => {
    const rw = p.locks.readWriteLock("doc");
    // A flow of the same Surelock started before the section: it carries no section, so its
    // read is a fresh one and waits behind the writer.
    const go = later();
    const outside = (async (): Promise<Lease> => {
      await go.promise;
      return rw.read().acquire({ timeout: 60_000 });
    })();
    const reader = w.track(outside);
    const inside = later();
    let nested: { held: boolean; at: number } | undefined;
    const section = w.track(rw.write().withLock(async () => {
      go.resolve();
      await inside.promise;
      // Queued behind that reader, this read would wait for the writer whose section waits for it.
      nested = await rw.read().withLock((lease) => ({ held: lease.held, at: w.now }), { timeout: 0 });
    }));
    await w.to(100);
    assert.equal((await queueOf("doc")).length, 1, "the other flow's read stands in line behind the writer");
    assert.equal(reader.settled, false);
    inside.resolve();
    await w.clock.settle();
    assert.ok(section.settled && section.ok, `the write section ends: ${String(section.error)}`);
    assert.deepEqual(nested, { held: true, at: 100 }, "the nested read held at once, without waiting");
    await w.clock.settle();
    assert.ok(reader.settled && reader.ok, "the waiting reader is served by the writer's release");
    await (reader.value as Lease).release();
  });

  it("a write acquire run twice (its reply lost, the client resent it): the lease holds the hold the first run founded, another flow of the same instance and another process are kept out, and one release frees it (seed 2)", async () => {
    const rw = p.locks.readWriteLock("doc");
    let sent = 0;
    p.wire.fault = (s) => (s.script === "acquire-shared" && ++sent === 1 ? { kind: "replay" } : undefined);
    const writing = w.track(rw.write().acquire({ timeout: 1_000 }));
    await w.clock.settle();
    assert.ok(writing.ok, `the resent acquire answers the first run's hold: ${String(writing.error ?? "pending")}`);
    const lease = writing.value as Lease;
    assert.equal(lease.held, true);
    const holders = (await w.observer.command(["ZRANGE", "surelock:rw:{doc}:holders", 0, -1])) as string[];
    assert.equal(holders.length, 1, `one write hold in Redis (${holders.join(", ")})`);
    assert.deepEqual(await queueOf("doc"), [], "the replay left no ticket of the writer waiting for itself");
    // Not a re-entry: the same instance asks from outside any section, as another flow would.
    const sameWorker = w.track(rw.write().tryAcquire());
    const otherWorker = w.track(w.proc().locks.readWriteLock("doc").write().tryAcquire());
    await w.clock.settle();
    assert.equal(sameWorker.value, null, "a second owner in the same process");
    assert.equal(otherWorker.value, null, "a second owner in another process");
    await lease.release();
    const after = w.track(w.proc().locks.readWriteLock("doc").write().tryAcquire());
    await w.clock.settle();
    assert.ok(after.value, "one release frees the lock: the replay counted once");
    await (after.value as Lease).release();
  });

  it("a 2-permit semaphore on 3 nodes, three processes each cut off from a different node: three different majorities, and not one permit is handed out (seeds 34 and 3)", async () => {
    // Each process reaches two nodes of three, a majority, and every node would have room for the
    // next one: with a majority as the quorum, three holders of two permits, each believed at once.
    const clock = new VirtualClock();
    const nodes = [0, 1, 2].map(() => new MemoryRedis({ clock }));
    for (const node of nodes) for (const script of Object.values(LUA)) await node.command(["SCRIPT", "LOAD", script.lua]);
    const procs = [0, 1, 2].map((cut) => new Surelock({
      clock,
      redis: nodes.map((node, i) => {
        const link = node.duplicate();
        if (i === cut) link.intercept(() => ({ kind: "drop-reply", then: "hang" }));
        return link;
      }),
    }));
    const held: Lease[] = [];
    try {
      for (const [i, locks] of procs.entries()) {
        const tried = w.track(locks.semaphore("seats", { permits: 2 }).tryAcquire());
        for (let step = 0; step < 50 && !tried.settled; step++) await clock.advance(100);
        assert.ok(tried.settled, `process ${i}'s tryAcquire settles`);
        if (tried.ok && tried.value) held.push(tried.value);
        else assert.ok(tried.error instanceof QuorumError, `process ${i}: ${String(tried.error ?? "no permit")}`);
      }
      assert.equal(held.length, 0, `${held.length} permits handed out on a majority each (a permit of 2 needs all 3 nodes)`);
      for (const node of nodes) {
        assert.equal(await node.command(["ZCOUNT", "surelock:sem:{seats}:holders", "(0", "+inf"]), 0, "nothing left where it was refused");
      }
    } finally {
      for (const lease of held) await lease.release().catch(() => {});
      const closing = w.track(Promise.all(procs.map((locks) => locks.close())));
      for (let i = 0; i < 10 && !closing.settled; i++) await clock.advance(1_000);
      assert.ok(closing.settled, "close() settles");
    }
  });

  it("quorum mode, extend racing the watchdog: a renewal that waits on a node whose reply was lost is decided after a later, shortening extend, and the lease never outlives the extend on a majority (seed 36)", async () => {
    // A quorum keepalive is decided once every node answered or timed out. The renewal (ttl 3 000,
    // sent at 1 000) is answered at once by node 0, late by node 1 (at 1 250), and never by node 2,
    // whose vote waits out the 300 ms command timeout (1 300). The extend (1 000 ms, sent at 1 200)
    // has all three answers at 1 250 and is decided first. Were the older renewal's decision to set
    // validity, the lease would believe until about 4 000 while every node drops the hold at 2 200.
    const clock = new VirtualClock();
    const nodes = [0, 1, 2].map(() => new MemoryRedis({ clock }));
    for (const node of nodes) for (const script of Object.values(LUA)) await node.command(["SCRIPT", "LOAD", script.lua]);
    const links = nodes.map((node) => node.duplicate());
    const wires = links.map((link) => new Wire(link, clock));
    const locks = new Surelock({ redis: links, clock, ttl: 3_000, commandTimeout: 300 });
    const slow = new Gate();
    const never = new Gate();
    try {
      const acquiring = w.track(locks.mutex("k").acquire());
      await clock.advance(0);
      assert.ok(acquiring.ok, String(acquiring.error));
      const lease = acquiring.value as Lease;
      // Node 1 holds its keepalive replies (the renewal's, then the extend's behind it); node 2
      // runs the renewal and its reply is lost on the way.
      (wires[1] as Wire).fault = (s) => (s.script === "keepalive" ? { kind: "gate", gate: slow, stage: "reply" } : undefined);
      let renewals = 0;
      (wires[2] as Wire).fault = (s) => (s.script === "keepalive" && ++renewals === 1 ? { kind: "drop-reply", then: "hang" } : undefined);
      await clock.advance(1_000);
      assert.equal(slow.arrivals.length, 1, "the renewal ran on node 1; its reply is held");
      await clock.advance(200);
      const extending = w.track(lease.extend(1_000));
      await clock.advance(50);
      for (const wire of wires) wire.fault = (s) => (s.script === "keepalive" ? { kind: "gate", gate: never, stage: "execution" } : undefined);
      slow.open();
      await clock.settle();
      assert.ok(extending.ok, `the extend is decided once node 1 answers: ${String(extending.error ?? "pending")}`);
      const loss = watchLoss(clock, lease);
      // Every millisecond: a lease that believes it holds the lock has it, alive, on a majority.
      while (clock.now() < 2_400) {
        await clock.advance(1);
        if (!lease.held) continue;
        let alive = 0;
        for (const node of nodes) {
          const owner = await node.command(["HGET", "surelock:{k}:lock", "o"]);
          const pttl = Number(await node.command(["PTTL", "surelock:{k}:lock"]));
          if (owner === lease.owner && pttl > 0) alive++;
        }
        assert.ok(alive >= 2, `believed held at ${clock.now()} with the hold alive on ${alive} of 3 nodes`);
      }
      assert.ok(loss.at !== undefined && loss.at <= 1_200 + 1_000, `the lease ends with the extend's life (lost at ${String(loss.at)})`);
    } finally {
      slow.open();
      never.open();
      const closing = w.track(locks.close());
      for (let i = 0; i < 10 && !closing.settled; i++) await clock.advance(1_000);
      assert.ok(closing.settled, "close() settles");
    }
  });
});
