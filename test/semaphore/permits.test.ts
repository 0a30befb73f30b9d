/**
 * Counted permits and setPermits() on a real redis-server: n permits are taken at once and given
 * back together; the limit holds across processes; a large request at the head of the line is not
 * overtaken by smaller ones; a raised limit wakes the waiters it lets in by announcement; a lowered
 * one leaves holders alone and makes newcomers wait; every caller adopts a limit set on purpose.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConflictError, InvalidArgumentError, type Lease } from "../../src/index.js";
import { runFixture } from "../fixtures/processes.js";
import { eventually, Harness, quietFor, standaloneSuite, startsWaiting, within } from "../helpers/fixtures.js";
import type { RedisServer } from "../helpers/redis-topology.js";

describe("semaphore: counted permits and setPermits()", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  const used = async (key: string): Promise<number> => Number(await server.command("HGET", `surelock:sem:{${key}}:state`, "u"));

  it("acquire({ permits: n }) takes n at once, the lease says how many, and its release gives all n back", async () => {
    const sem = h.locks().semaphore("batch", { permits: 5 });
    const three = await sem.acquire({ permits: 3 });
    assert.equal(three.permits, 3);
    assert.equal(await used("batch"), 3);
    assert.equal(await sem.tryAcquire({ permits: 3 }), null, "3 more do not fit: none is taken");
    assert.equal(await used("batch"), 3);
    const two = await sem.tryAcquire({ permits: 2 });
    assert.ok(two);
    assert.equal(await sem.tryAcquire(), null);
    await three.release();
    assert.equal(await used("batch"), 2, "all three came back");
    const back = await sem.withLock((lease) => lease.permits, { permits: 3 });
    assert.equal(back, 3);
    await two.release();
    assert.equal(await used("batch"), 0);
    const single = await h.locks().mutex("m").acquire();
    assert.equal(single.permits, 1, "other locks' leases hold one");
    await single.release();
  });

  it("never more than the limit held at once across 3 processes taking 1 to 3 permits", { timeout: 60_000 }, async () => {
    const runs = Array.from({ length: 3 }, () => runFixture("permit-worker", [server.port, "pool", 4, 3, 8, 3]).done);
    const results = await within(45_000, Promise.all(runs), "the workers");
    for (const r of results) {
      const [max, done] = r.stdout.trim().split(" ").map(Number);
      assert.equal(done, 24, r.stderr);
      assert.ok(max !== undefined && max <= 4, `a process saw ${max} permits in use of 4`);
    }
    assert.equal(await server.command("GET", "test:{pool}:in-use"), "0");
  });

  it("a large request at the head of the line is served before smaller ones that came later, even when they would fit now", async () => {
    const sem = h.locks().semaphore("fair", { permits: 3 });
    const order: string[] = [];
    const first = await sem.acquire({ permits: 2 });
    const bigWaits = startsWaiting("fair");
    const big = h.locks().semaphore("fair", { permits: 3 }).acquire({ permits: 3 }).then((l) => { order.push("big"); return l; });
    await bigWaits;
    const smallWaits = startsWaiting("fair");
    const small = h.locks().semaphore("fair", { permits: 3 }).acquire().then((l) => { order.push("small"); return l; });
    await smallWaits;
    // One permit is free, but the large request stands ahead of it.
    await quietFor(300);
    assert.deepEqual(order, []);
    await first.release();
    const bigLease = await within(2_000, big);
    assert.deepEqual(order, ["big"]);
    await bigLease.release();
    await (await within(2_000, small)).release();
    assert.deepEqual(order, ["big", "small"]);
  });

  it("setPermits() raising the limit wakes the waiter it lets in by announcement, not by the safety poll", async () => {
    const admin = h.locks().semaphore("grow", { permits: 1 });
    const held = await admin.acquire();
    const waiters = h.locks({ pollInterval: 60_000 }).semaphore("grow", { permits: 1 });
    const leases: Lease[] = [held];
    // Four rounds: a refresh of the ticket (every second) cannot explain four prompt wake-ups.
    for (let limit = 2; limit <= 5; limit++) {
      const waits = startsWaiting("grow");
      const waiting = waiters.acquire();
      await waits;
      // Its ticket stands; it then subscribes and attempts once more (a grant made before it
      // listened would go unheard). Once that attempt refreshed the ticket, only an announcement
      // or the next refresh (a second later) can tell it of a grant.
      const [queued] = (await server.command("HVALS", "surelock:sem:{grow}:tickets")) as string[];
      await eventually(async () => ((await server.command("HVALS", "surelock:sem:{grow}:tickets")) as string[])[0] !== queued, 2_000,
        "the attempt after subscribing");
      const raisedAt = performance.now();
      await admin.setPermits(limit);
      leases.push(await within(2_000, waiting));
      const ms = performance.now() - raisedAt;
      assert.ok(ms < 400, `woken ${ms.toFixed(0)} ms after the raise`);
      assert.equal(admin.permits, limit, "the instance that set it adopts it");
    }
    assert.equal(await used("grow"), 5);
    for (const lease of leases) await lease.release();
  });

  it("setPermits() lowering the limit: holders keep their permits, newcomers wait until usage is under it", async () => {
    const sem = h.locks().semaphore("shrink", { permits: 3 });
    const holders = [await sem.acquire(), await sem.acquire(), await sem.acquire()];
    await sem.setPermits(1);
    assert.ok(holders.every((l) => l.held));
    assert.equal(await sem.tryAcquire(), null);
    const waits = startsWaiting("shrink");
    let got: Lease | undefined;
    const newcomer = h.locks().semaphore("shrink", { permits: 3 }).acquire().then((l) => (got = l));
    await waits;
    await holders[0]!.release();
    await holders[1]!.release();
    await quietFor(200);
    assert.equal(got, undefined, "one permit still in use of a limit of 1");
    await holders[2]!.release();
    await (await within(2_000, newcomer)).release();
  });

  it("a waiter asking for more than a lowered limit is refused at once with ConflictError, and the line moves on", async () => {
    const sem = h.locks().semaphore("refuse", { permits: 3 });
    const held = await sem.acquire({ permits: 2 });
    const other = h.locks().semaphore("refuse", { permits: 3 });
    const bigWaits = startsWaiting("refuse");
    const big = other.acquire({ permits: 3 }).then(() => assert.fail("granted"), (error: unknown) => error);
    await bigWaits;
    const smallWaits = startsWaiting("refuse");
    const small = other.acquire();
    await smallWaits;
    await sem.setPermits(2);
    const error = await within(2_000, big);
    assert.ok(error instanceof ConflictError, String(error));
    await held.release();
    await (await within(2_000, small)).release();
    assert.equal(await server.command("EXISTS", "surelock:sem:{refuse}:tickets"), 0, "no ticket left behind");
  });

  it("every caller adopts a limit set on purpose (no ConflictError); `permits` stays what each instance knows", async () => {
    const a = h.locks().semaphore("adopt", { permits: 2 });
    const b = h.locks().semaphore("adopt", { permits: 2 });
    await (await a.acquire()).release();
    await a.setPermits(4);
    const leases = [await b.acquire(), await b.acquire(), await b.acquire(), await b.acquire()];
    assert.equal(await b.tryAcquire(), null);
    assert.equal(a.permits, 4);
    assert.equal(b.permits, 2);
    const late = h.locks().semaphore("adopt", { permits: 7 });
    assert.equal(await late.tryAcquire(), null, "created with 7: follows the stored 4");
    for (const lease of leases) await lease.release();
    assert.ok(await a.tryAcquire({ permits: 4 }).then(async (l) => { await l?.release(); return l !== null; }));
  });

  it("bad permits are refused with InvalidArgumentError before any I/O", async () => {
    const sem = h.locks().semaphore("valid", { permits: 3 });
    const bad: [string, () => Promise<unknown>][] = [
      ["options.permits", () => sem.acquire({ permits: 0 })],
      ["options.permits", () => sem.acquire({ permits: 4 })],
      ["options.permits", () => sem.acquire({ permits: 1.5 })],
      ["options.permits", () => sem.tryAcquire({ permits: Number.NaN })],
      ["options.permits", () => sem.withLock(() => 1, { permits: "2" as unknown as number })],
      ["options.permits", () => h.locks().mutex("m").acquire({ permits: 2 } as never)],
      ["permits", () => sem.setPermits(0)],
      ["permits", () => sem.setPermits(2.5)],
      ["permits", () => sem.setPermits(1_000_001)],
    ];
    for (const [argument, call] of bad) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof InvalidArgumentError, `${argument}: ${String(error)}`);
      assert.equal(error.argument, argument);
    }
    assert.equal(await server.command("EXISTS", "surelock:sem:{valid}:state"), 0, "nothing was sent");
  });
});
