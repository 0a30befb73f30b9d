/**
 * Interleavings the torture suite found (test/torture/regressions.json) that no other test forced
 * on its own, each held open here on the in-memory double and its virtual clock: the same steps,
 * in the same order, on every run. The seed that found each one is in its name.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { QuorumError, Surelock, type Lease } from "../../src/index.js";
import { MemoryRedis, VirtualClock } from "../../src/testing/index.js";
import { World, later, type Proc } from "./support.js";

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

  it("a 2-permit semaphore on 3 nodes, three processes each cut off from a different node: three different majorities, and not one permit is handed out (seeds 34 and 3)", async () => {
    // Each process reaches two nodes of three, a majority, and every node would have room for the
    // next one: with a majority as the quorum, three holders of two permits, each believed at once.
    const clock = new VirtualClock();
    const nodes = [0, 1, 2].map(() => new MemoryRedis({ clock }));
    const procs = [0, 1, 2].map((cut) => new Surelock({
      clock,
      redis: nodes.map((node, i) => {
        const link = node.duplicate();
        if (i === cut) link.intercept(() => ({ kind: "fail" }));
        return link;
      }),
    }));
    const held: Lease[] = [];
    try {
      for (const [i, locks] of procs.entries()) {
        const tried = w.track(locks.semaphore("seats", { permits: 2 }).tryAcquire());
        await clock.advance(1_000);
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
});
