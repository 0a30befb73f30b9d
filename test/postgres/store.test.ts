import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fresh, postgresSuite, sleep } from "./support.js";

describe("PostgreSQL store: mutex", () => {
  const ctx = postgresSuite();

  it("founds a hold with a token, refuses a second, frees on release; tokens grow per name", async () => {
    const s = ctx.store();
    const name = fresh();
    const a = await s.acquire({ names: [name], hold: "h1", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.equal(a.status, "founded");
    assert.ok(a.status === "founded" && a.token === 1n && a.pttlMs === 5_000);
    const b = await s.acquire({ names: [name], hold: "h2", owner: "o2", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.equal(b.status, "busy");
    assert.ok(b.status === "busy" && b.position === -1 && b.waitMs > 4_000 && b.waitMs <= 5_000);
    assert.deepEqual(await s.release([name], "h1"), { status: "freed", remaining: 0 });
    assert.deepEqual(await s.release([name], "h1"), { status: "gone", remaining: 0 });
    const c = await s.acquire({ names: [name], hold: "h2", owner: "o2", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.ok(c.status === "founded" && c.token === 2n);
  });

  it("a replay of an attempt whose answer was lost reads our own row: same hold, same token", async () => {
    const s = ctx.store();
    const name = fresh();
    const ask = { names: [name], hold: "h1", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } } as const;
    const a = await s.acquire(ask);
    const again = await s.acquire(ask);
    assert.ok(a.status === "founded" && again.status === "founded");
    assert.equal(again.token, a.token);
    assert.equal((await s.inspect(name)).holds.length, 1);
  });

  it("re-entry by hold and by owner counts entries; the hold ends with its last", async () => {
    const s = ctx.store();
    const name = fresh();
    await s.acquire({ names: [name], hold: "h1", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    const e2 = await s.acquire({ names: [name], hold: "h1-2", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "hold", hold: "h1" }, entry: "e2" });
    assert.ok(e2.status === "entered" && e2.hold === "h1" && e2.token === 1n);
    const e3 = await s.acquire({ names: [name], hold: "h9", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "owner" }, entry: "e3" });
    assert.ok(e3.status === "entered" && e3.hold === "h1");
    const other = await s.acquire({ names: [name], hold: "h8", owner: "o2", mode: "x", ttlMs: 5_000, reentry: { kind: "owner" }, entry: "e8" });
    assert.equal(other.status, "busy");
    assert.deepEqual(await s.release([name], "h1", "e2"), { status: "held", remaining: 2 });
    assert.deepEqual(await s.release([name], "h1", "e2"), { status: "held", remaining: 2 }, "a replayed release changes nothing");
    assert.deepEqual(await s.release([name], "h1", "e3"), { status: "held", remaining: 1 });
    assert.deepEqual(await s.release([name], "h1"), { status: "freed", remaining: 0 });
    const gone = await s.acquire({ names: [name], hold: "hx", owner: "o1", mode: "x", ttlMs: 5_000, reentry: { kind: "hold", hold: "h1" }, entry: "ex" });
    assert.equal(gone.status, "gone");
  });

  it("expiry is data: a lease not renewed is gone on the database's clock, and the next holder's token is higher", async () => {
    const s = ctx.store();
    const name = fresh();
    const a = await s.acquire({ names: [name], hold: "h1", owner: "o1", mode: "x", ttlMs: 100, reentry: { kind: "fresh" } });
    assert.equal(a.status, "founded");
    await sleep(150);
    assert.equal((await s.check([name], "h1")).live, false);
    const [renewed] = await s.renew([{ kind: "hold", names: [name], id: "h1", ttlMs: 5_000 }]);
    assert.equal(renewed!.live, false, "an expired lease is never renewed");
    const b = await s.acquire({ names: [name], hold: "h2", owner: "o2", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.ok(b.status === "founded" && a.status === "founded" && b.token > a.token);
    assert.equal((await s.release([name], "h1")).status, "gone");
  });

  it("one renewal statement for every lease and ticket of an instance", async () => {
    const s = ctx.store();
    const names = [fresh(), fresh(), fresh()];
    for (const [i, n] of names.entries()) await s.acquire({ names: [n], hold: `h${i}`, owner: "o", mode: "x", ttlMs: 300, reentry: { kind: "fresh" } });
    const waiter = await s.acquire({ names: [names[0]!], hold: "w", owner: "o2", mode: "x", ttlMs: 300, reentry: { kind: "fresh" }, ticketMs: 300 });
    assert.ok(waiter.status === "busy" && waiter.position === 0);
    const before = s.statements;
    const r = await s.renew([
      ...names.map((n, i) => ({ kind: "hold" as const, names: [n], id: `h${i}`, ttlMs: 2_000 })),
      { kind: "ticket", names: [names[0]!], id: "w", ttlMs: 2_000 },
      { kind: "hold", names: [names[1]!], id: "nobody", ttlMs: 2_000 },
    ]);
    assert.equal(s.statements - before, 1);
    assert.deepEqual(r.map((x) => x.live), [true, true, true, true, false]);
    await sleep(400);
    for (const [i, n] of names.entries()) assert.equal((await s.check([n], `h${i}`)).live, true);
    assert.equal((await s.inspect(names[0]!)).tickets.length, 1);
  });

  it("fair: waiters are served in ticket order, a newcomer without a ticket does not jump the queue", async () => {
    const s = ctx.store();
    const name = fresh();
    const ask = (hold: string, ticketMs = 5_000) => s.acquire({ names: [name], hold, owner: hold, mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs });
    assert.equal((await ask("h0")).status, "founded");
    for (const [i, h] of ["w1", "w2", "w3"].entries()) {
      const r = await ask(h);
      assert.ok(r.status === "busy" && r.position === i, `${h} at ${i}`);
    }
    await s.release([name], "h0");
    assert.equal((await ask("late", 0)).status, "busy", "a newcomer waits behind the queue");
    assert.equal((await ask("w2")).status, "busy", "the second waits for the first");
    assert.equal((await ask("w1")).status, "founded");
    await s.release([name], "w1");
    assert.equal((await ask("w3")).status, "busy");
    assert.equal((await ask("w2")).status, "founded");
  });

  it("a waiter whose ticket expired (it died) no longer blocks those behind it", async () => {
    const s = ctx.store();
    const name = fresh();
    const ask = (hold: string, ticketMs: number) => s.acquire({ names: [name], hold, owner: hold, mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs });
    await ask("h0", 0);
    await ask("dead", 100);
    await ask("alive", 5_000);
    await s.release([name], "h0");
    assert.equal((await ask("alive", 5_000)).status, "busy");
    await sleep(150);
    assert.equal((await ask("alive", 5_000)).status, "founded");
  });

  it("a release wakes the waiter first in line by NOTIFY, not the others; an uncontended release notifies nobody", async () => {
    const s = ctx.store({ pollMs: 5_000 });
    const name = fresh();
    assert.equal(await s.listening(), true);
    const wakes: string[] = [];
    const stop = s.listen(name, (w) => wakes.push(w.kind === "released" ? `released head=${w.head}` : w.kind));
    await s.acquire({ names: [name], hold: "h0", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    await s.release([name], "h0");
    await s.acquire({ names: [name], hold: "h1", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    for (const w of ["w1", "w2"]) await s.acquire({ names: [name], hold: w, owner: w, mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs: 5_000 });
    const first = s.watch(name, "w1");
    const second = s.watch(name, "w2");
    const t0 = performance.now();
    await s.release([name], "h1");
    assert.equal(await first.next(5_000), true);
    assert.ok(performance.now() - t0 < 2_000);
    assert.equal(await second.next(50), false, "not first in line: no wake-up, the poll bound ends the wait");
    first.close();
    second.close();
    stop();
    assert.deepEqual(wakes, ["released head=w1"], "the uncontended release before it sent nothing");
  });
});

describe("PostgreSQL store: shared modes and multi", () => {
  const ctx = postgresSuite();

  it("semaphore: counted permits up to the limit; a limit that differs while held is a conflict", async () => {
    const s = ctx.store();
    const name = fresh();
    const ask = (hold: string, permits: number, limit = 3) => s.acquire({ names: [name], hold, owner: hold, mode: "s", permits, limit, ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.equal((await ask("a", 2)).status, "founded");
    assert.equal((await ask("b", 2)).status, "busy");
    assert.equal((await ask("c", 1)).status, "founded");
    assert.deepEqual(await ask("d", 1, 5), { status: "conflict", limit: 3 });
    const i = await s.inspect(name);
    assert.equal(i.limit, 3);
    assert.deepEqual(i.holds.map((h) => h.permits), [2, 1]);
    const tokens = i.holds.map((h) => h.token);
    assert.ok(tokens[1]! > tokens[0]!);
  });

  it("read-write: readers share, a writer excludes, a waiting writer holds back later readers", async () => {
    const s = ctx.store();
    const name = fresh();
    const ask = (hold: string, mode: "r" | "w") => s.acquire({ names: [name], hold, owner: hold, mode, ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs: 5_000 });
    assert.equal((await ask("r1", "r")).status, "founded");
    assert.equal((await ask("r2", "r")).status, "founded");
    assert.equal((await ask("w1", "w")).status, "busy");
    assert.equal((await ask("r3", "r")).status, "busy", "the writer's ticket is ahead");
    await s.release([name], "r1");
    await s.release([name], "r2");
    assert.equal((await ask("w1", "w")).status, "founded");
    assert.equal((await ask("r3", "r")).status, "busy");
    await s.release([name], "w1");
    assert.equal((await ask("r3", "r")).status, "founded");
  });

  it("multi: all names or none, one hold, a token per name in the order given", async () => {
    const s = ctx.store();
    const [a, b, c] = [fresh("m"), fresh("m"), fresh("m")];
    await s.acquire({ names: [b], hold: "pre", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.equal((await s.acquire({ names: [c, a, b], hold: "m1", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } })).status, "busy");
    assert.equal((await s.inspect(a)).holds.length, 0, "nothing taken when one name is busy");
    await s.release([b], "pre");
    const m = await s.acquire({ names: [c, a, b], hold: "m1", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.ok(m.status === "founded");
    assert.deepEqual(m.tokens, [1n, 1n, 2n]);
    assert.equal((await s.check([a, b, c], "m1")).live, true);
    assert.deepEqual(await s.release([a, b, c], "m1"), { status: "freed", remaining: 0 });
    for (const n of [a, b, c]) assert.equal((await s.inspect(n)).holds.length, 0);
  });
});

describe("PostgreSQL store: departures and the operator's calls", () => {
  const ctx = postgresSuite();

  it("a waiter that leaves lets the next one go, and the next is woken as first in line", async () => {
    const s = ctx.store({ pollMs: 5_000 });
    const name = fresh();
    const ask = (hold: string) => s.acquire({ names: [name], hold, owner: hold, mode: "r", ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs: 5_000 });
    await s.acquire({ names: [name], hold: "writer", owner: "writer", mode: "w", ttlMs: 5_000, reentry: { kind: "fresh" } });
    await s.acquire({ names: [name], hold: "w2", owner: "w2", mode: "w", ttlMs: 5_000, reentry: { kind: "fresh" }, ticketMs: 5_000 });
    assert.ok((await ask("r1")).status === "busy");
    assert.equal(await s.listening(), true);
    const watch = s.watch(name, "r1");
    await s.release([name], "writer");
    assert.equal(await watch.next(200), false, "the writer's release wakes w2, first in line, not r1");
    await s.leave([name], "w2");
    assert.equal(await watch.next(5_000), true, "w2 left: r1 is first in line now");
    watch.close();
    assert.equal((await ask("r1")).status, "founded");
    assert.deepEqual((await s.inspect(name)).tickets, []);
  });

  it("forceRelease ends every hold and ticket; the holder learns it at its next renewal; the counter stays", async () => {
    const s = ctx.store();
    const name = fresh();
    await s.acquire({ names: [name], hold: "h1", owner: "o", mode: "x", ttlMs: 60_000, reentry: { kind: "fresh" } });
    await s.acquire({ names: [name], hold: "h2", owner: "o2", mode: "x", ttlMs: 60_000, reentry: { kind: "fresh" }, ticketMs: 60_000 });
    const before = await s.inspect(name);
    assert.deepEqual([before.holds.map((h) => h.hold), before.tickets.map((t) => t.ticket), before.counter], [["h1"], ["h2"], 1n]);
    assert.equal(await s.forceRelease(name), 1);
    assert.equal((await s.extend([name], "h1", 60_000)).live, false);
    const after = await s.inspect(name);
    assert.deepEqual([after.holds, after.tickets, after.counter], [[], [], 1n]);
    const next = await s.acquire({ names: [name], hold: "h3", owner: "o3", mode: "x", ttlMs: 60_000, reentry: { kind: "fresh" } });
    assert.ok(next.status === "founded" && next.token === 2n);
  });

  it("a multi-name hold waits in every name's queue and is renewed as one item", async () => {
    const s = ctx.store();
    const [a, b] = [fresh("m"), fresh("m")];
    await s.acquire({ names: [b], hold: "pre", owner: "o", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    const multi = () => s.acquire({ names: [a, b], hold: "m", owner: "m", mode: "x", ttlMs: 300, reentry: { kind: "fresh" }, ticketMs: 5_000 });
    assert.equal((await multi()).status, "busy");
    assert.deepEqual([(await s.inspect(a)).tickets.length, (await s.inspect(b)).tickets.length], [1, 1]);
    assert.equal((await s.acquire({ names: [a], hold: "late", owner: "late", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } })).status, "busy", "a's queue holds the multi-lock's ticket");
    await s.release([b], "pre");
    assert.equal((await multi()).status, "founded");
    const [renewed] = await s.renew([{ kind: "hold", names: [a, b], id: "m", ttlMs: 5_000 }]);
    assert.equal(renewed!.live, true);
    await sleep(400);
    assert.equal((await s.check([b, a], "m")).live, true);
    await s.release([b], "m");
    assert.equal((await s.check([a, b], "m")).live, false, "a release of one name ends the hold on it: the hold is no longer whole");
  });
});

describe("PostgreSQL store: election and latch", () => {
  const ctx = postgresSuite();

  it("the leader proclaims, observers read it and are woken; resign ends it", async () => {
    const s = ctx.store();
    const name = fresh("e");
    assert.equal(await s.readLeader(name), null);
    await s.acquire({ names: [name], hold: "L", owner: "node-1", mode: "x", ttlMs: 5_000, reentry: { kind: "fresh" } });
    assert.equal(await s.listening(), true);
    const woken = s.waitForWake(name, 5_000);
    assert.equal(await s.proclaim(name, "L", "http://node-1"), true);
    assert.equal(await woken, true);
    assert.equal(await s.proclaim(name, "other", "x"), false, "only the live leader proclaims");
    const leader = await s.readLeader(name);
    assert.ok(leader && leader.hold === "L" && leader.owner === "node-1" && leader.value === "http://node-1" && leader.token === 1n);
    assert.equal(await s.resign([name], "L"), true);
    assert.equal(await s.readLeader(name), null);
  });

  it("a latch counts each id once, announces 0, and refuses another count", async () => {
    const s = ctx.store();
    const name = fresh("l");
    assert.equal(await s.readLatch(name), null);
    assert.deepEqual(await s.countDown(name, "a", 2, 5_000), { status: "counted", remaining: 1 });
    assert.deepEqual(await s.countDown(name, "a", 2, 5_000), { status: "replay", remaining: 1 });
    assert.deepEqual(await s.countDown(name, "b", 3, 5_000), { status: "conflict", remaining: 2 });
    assert.equal(await s.listening(), true);
    const woken = s.waitForWake(name, 5_000);
    assert.deepEqual(await s.countDown(name, "b", 2, 5_000), { status: "counted", remaining: 0 });
    assert.equal(await woken, true);
    assert.deepEqual(await s.readLatch(name), { count: 2, remaining: 0 });
    assert.deepEqual(await s.countDown(name, "c", 2, 5_000), { status: "replay", remaining: 0 });
  });
});
