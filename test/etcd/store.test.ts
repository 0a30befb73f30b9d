import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  ConflictError, InvalidArgumentError, LockLostError, LockNotHeldError, LockTimeoutError, UnsupportedError,
} from "../../src/errors.js";
import type { EtcdStore } from "../../src/etcd/index.js";
import { aborted, within } from "../helpers/fixtures.js";
import { fresh, startWorld, uid, waitersReach, type EtcdWorld } from "./support.js";

/**
 * Each test's bound: a store call that never settles fails its test with the runner's message and
 * the file goes on (its requests are bounded by the store; this is the net under that promise).
 */
const T = { timeout: 60_000 };

describe("etcd store: locks on a 3-member cluster", () => {
  let world: EtcdWorld;
  let a: EtcdStore;
  let b: EtcdStore;
  before(async () => {
    world = await startWorld();
    a = world.store();
    b = world.store();
  });
  after(() => world?.stop());

  it("a mutex: one holder, its token is the key's creation revision, the next waits and gets a higher token", T, async () => {
    const name = uid("m/");
    const first = await a.acquire(fresh(name));
    assert.equal(first.status, "founded");
    assert.ok(first.ref.token > 0n);
    assert.ok(first.heldUntil() > performance.now());
    await assert.rejects(b.acquire(fresh(name, { timeoutMs: 0 })), LockTimeoutError);
    const waiting = b.acquire(fresh(name, { timeoutMs: 5_000 }));
    const info = await a.inspect(name);
    assert.equal(info.holders.length, 1);
    assert.equal(info.holders[0]!.hold, first.ref.hold);
    assert.deepEqual(await a.release(first.ref, first.ref.hold), { status: "freed" });
    const second = await within(5_000, waiting, "the waiter's grant");
    assert.ok(second.ref.token > first.ref.token, "tokens rise");
    assert.equal(first.signal.aborted, false, "a release is not a loss");
    await b.release(second.ref, second.ref.hold);
    assert.equal((await a.inspect(name)).holders.length + (await a.inspect(name)).waiters.length, 0, "nothing left behind");
  });

  it("a timed-out waiter leaves no key behind, and a one-attempt acquire costs no wait", T, async () => {
    const name = uid("m/");
    const h = await a.acquire(fresh(name));
    const started = performance.now();
    await assert.rejects(b.acquire(fresh(name, { timeoutMs: 300 })), (e: unknown) => e instanceof LockTimeoutError && e.timeoutMs === 300);
    assert.ok(performance.now() - started < 3_000);
    // The waiter's key is taken back in the background: wait for it, the holder alone remains.
    for (let i = 0; i < 100 && (await a.inspect(name)).waiters.length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    const info = await a.inspect(name);
    assert.equal(info.waiters.length, 0);
    assert.equal(info.holders.length, 1);
    await a.release(h.ref, h.ref.hold);
  });

  it("waiters are served in arrival (revision) order, each watching only its predecessor", T, async () => {
    const name = uid("fifo/");
    const h = await a.acquire(fresh(name));
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const store = i % 2 === 0 ? a : b;
      const req = fresh(name, { timeoutMs: 10_000 });
      waits.push(store.acquire(req).then(async (held) => {
        order.push(i);
        await store.release(held.ref, held.ref.hold);
      }));
      // Arrival order is creation order: wait until this waiter's key exists.
      await waitersReach(a, name, i + 1);
    }
    await a.release(h.ref, h.ref.hold);
    await within(10_000, Promise.all(waits), "the queue");
    assert.deepEqual(order, [0, 1, 2, 3]);
  });

  it("re-entry by hold and by owner adds entries; the lock is freed with the last", T, async () => {
    const name = uid("re/");
    const req = fresh(name);
    const h = await a.acquire(req);
    const again = await a.acquire({ ...fresh(name), hold: uid(), entry: "e2", reentry: { kind: "hold", hold: h.ref.hold } });
    assert.equal(again.status, "entered");
    assert.equal(again.ref.token, h.ref.token);
    const byOwner = await a.acquire({ ...fresh(name), owner: req.owner, entry: "e3", reentry: { kind: "owner" } });
    assert.equal(byOwner.status, "entered");
    assert.equal((await a.inspect(name)).holders[0]!.entries, 3);
    assert.deepEqual(await a.release(h.ref, "e2"), { status: "held" });
    assert.deepEqual(await a.release(h.ref, "e2"), { status: "held" }, "a replayed release changes nothing");
    assert.deepEqual(await a.release(h.ref, "e3"), { status: "held" });
    assert.deepEqual(await a.release(h.ref, req.entry), { status: "freed" });
    assert.deepEqual(await a.release(h.ref, req.entry), { status: "gone" });
    await assert.rejects(a.acquire({ ...fresh(name), reentry: { kind: "hold", hold: h.ref.hold } }), LockNotHeldError);
  });

  it("re-entry by owner of another process's hold is refused with UnsupportedError naming it", T, async () => {
    const name = uid("re/");
    const req = fresh(name);
    const h = await a.acquire(req);
    await assert.rejects(b.acquire({ ...fresh(name), owner: req.owner, reentry: { kind: "owner" } }), (e: unknown) =>
      e instanceof UnsupportedError && /re-entry by owner/.test(e.message));
    await a.release(h.ref, h.ref.hold);
  });

  it("a read-write lock: readers share, a writer waits for them, a reader behind a writer waits", T, async () => {
    const name = uid("rw/");
    const r1 = await a.acquire(fresh(name, {}, { kind: "read" }));
    const r2 = await b.acquire(fresh(name, {}, { kind: "read" }));
    const w = b.acquire(fresh(name, { timeoutMs: 10_000 }, { kind: "write" }));
    await waitersReach(a, name, 1);
    await assert.rejects(a.acquire(fresh(name, { timeoutMs: 0 }, { kind: "read" })), LockTimeoutError, "a reader queues behind the waiting writer");
    await a.release(r1.ref, r1.ref.hold);
    await b.release(r2.ref, r2.ref.hold);
    const wh = await within(5_000, w, "the writer");
    assert.equal((await a.inspect(name)).holders.length, 1);
    await b.release(wh.ref, wh.ref.hold);
  });

  it("a semaphore counts permits, serves in order, and refuses a holder with another limit", T, async () => {
    const name = uid("sem/");
    const s3 = (permits: number, more = {}) => fresh(name, more, { kind: "semaphore", limit: 3, permits });
    const x = await a.acquire(s3(2));
    const y = await b.acquire(s3(1));
    await assert.rejects(a.acquire(s3(1, { timeoutMs: 0 })), LockTimeoutError);
    await assert.rejects(a.acquire(fresh(name, { timeoutMs: 0 }, { kind: "semaphore", limit: 4, permits: 1 })), ConflictError);
    // The refused request's key may still be there (it is taken back in the background): the
    // oldest holder's limit decides, so this request, which agrees with it, is not refused.
    const z = a.acquire(s3(2, { timeoutMs: 10_000 }));
    z.catch(() => undefined);
    await a.release(x.ref, x.ref.hold);
    const zh = await within(5_000, z, "the permits");
    assert.equal((await a.inspect(name)).holders.length, 2);
    await b.release(y.ref, y.ref.hold);
    await a.release(zh.ref, zh.ref.hold);
    await assert.rejects(async () => a.setPermits(name, 5), UnsupportedError);
  });

  it("a multi-lock takes every name with one hold id and gives them all back", T, async () => {
    const n1 = uid("multi/");
    const n2 = uid("multi/");
    const hold = uid();
    const all = await a.acquireAll([n2, n1], { mode: { kind: "mutex" }, hold, entry: hold, owner: "o", reentry: { kind: "fresh" }, timeoutMs: 1_000 });
    assert.equal(all.length, 2);
    assert.ok(all.every((h) => h.ref.hold === hold));
    await assert.rejects(b.acquireAll([n1, n2], { mode: { kind: "mutex" }, hold: uid(), entry: "e", owner: "o2", reentry: { kind: "fresh" }, timeoutMs: 0 }), LockTimeoutError);
    for (const h of all) await a.release(h.ref, hold);
    const again = await b.acquireAll([n1, n2], { mode: { kind: "mutex" }, hold: uid(), entry: "e", owner: "o2", reentry: { kind: "fresh" }, timeoutMs: 1_000 });
    for (const h of again) await b.release(h.ref, "e");
  });

  it("the fencing guard writes only while the hold holds", T, async () => {
    const name = uid("fence/");
    const h = await a.acquire(fresh(name));
    const data = Buffer.from(uid("data/"));
    const ok = await a.fenced(h.ref, [{ request_put: { key: data, value: Buffer.from("1") } }]);
    assert.equal(ok.ok, true);
    assert.equal(await a.forceRelease(name), 1);
    const lost = await aborted(h.signal, 5_000);
    assert.ok(lost instanceof LockLostError && lost.reason === "taken");
    const next = await b.acquire(fresh(name));
    const refused = await a.fenced(h.ref, [{ request_put: { key: data, value: Buffer.from("stale") } }]);
    assert.equal(refused.ok, false);
    assert.equal((await world.client().get(data.toString()).string()), "1", "the stale write did not land");
    assert.equal(await a.check(h.ref), false);
    assert.equal(await b.check(next.ref), true);
    await b.release(next.ref, next.ref.hold);
  });

  it("a leaseTime hold lives on a lease of its own: its signal fires on time, extend moves it to a new lease", T, async () => {
    const name = uid("lt/");
    const h = await a.acquire(fresh(name, { leaseTimeMs: 1_000 }));
    assert.equal(h.ref.leaseKind, "own");
    const until = await a.extend(h.ref, 2_000);
    assert.ok(until > performance.now() + 1_500);
    const reason = await aborted(h.signal, 5_000);
    assert.ok(reason instanceof LockLostError && reason.reason === "expired");
    assert.ok(performance.now() >= until - 5, "not before its held-until");
    // The server frees the key at the lease's end (whole seconds, later than the holder gave up).
    const next = await b.acquire(fresh(name, { timeoutMs: 5_000 }));
    assert.ok(next.ref.token > h.ref.token);
    await b.release(next.ref, next.ref.hold);
  });

  it("extend of a session hold renews the session; once its key was force-released it is LockLostError taken", T, async () => {
    const name = uid("ext/");
    const h = await a.acquire(fresh(name));
    assert.equal(h.ref.leaseKind, "session");
    const before = h.heldUntil();
    const until = await a.extend(h.ref, 5_000);
    assert.ok(until >= before, "renewed, not shortened");
    await b.forceRelease(name);
    await assert.rejects(a.extend(h.ref, 5_000), (e: unknown) => e instanceof LockLostError && e.reason === "taken");
    assert.ok(h.signal.aborted);
  });

  it("an election: the first candidate leads, proclaims, and the next leads after it resigns", T, async () => {
    const name = uid("el/");
    const l1 = await a.campaign({ name, hold: uid(), entry: "c1", owner: "node-1", value: "v1", timeoutMs: 1_000 });
    assert.deepEqual({ ...(await b.readLeader(name))!, token: 0n }, { hold: l1.ref.hold, owner: "node-1", value: "v1", token: 0n });
    const second = b.campaign({ name, hold: uid(), entry: "c2", owner: "node-2", value: "v2", timeoutMs: 10_000 });
    await a.proclaim(l1.ref, "v1b");
    assert.equal((await b.readLeader(name))!.value, "v1b");
    await a.resign(l1.ref);
    const l2 = await within(5_000, second, "the next leader");
    assert.equal((await a.readLeader(name))!.owner, "node-2");
    assert.ok(l2.ref.token > l1.ref.token);
    await assert.rejects(a.proclaim(l1.ref, "late"), LockNotHeldError);
    await b.resign(l2.ref);
    assert.equal(await a.readLeader(name), undefined);
  });

  it("a latch opens at its count; an id counts once", T, async () => {
    const name = uid("latch/");
    const opened = b.awaitLatch(name, 2, 10_000);
    assert.equal(await a.countDown(name, "x", 10_000), true);
    assert.equal(await a.countDown(name, "x", 10_000), false, "a replay counts once");
    assert.equal((await a.readLatch(name, 2)).remaining, 1);
    await assert.rejects(a.awaitLatch(name, 2, 200), (e: unknown) => e instanceof LockTimeoutError && /latch/.test(e.message));
    assert.equal(await b.countDown(name, "y", 10_000), true);
    assert.equal((await within(5_000, opened, "the latch")).remaining, 0);
  });

  it("arguments are checked before any request", T, async () => {
    assert.throws(() => world.store({ client: {} }), InvalidArgumentError);
    await assert.rejects(a.acquire(fresh("")), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "name");
    await assert.rejects(a.acquire(fresh("x", { timeoutMs: -1 })), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "timeoutMs");
    await assert.rejects(a.acquire(fresh("x", { leaseTimeMs: 1 })), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "leaseTimeMs");
    await assert.rejects(a.acquire(fresh("x", {}, { kind: "semaphore", limit: 2, permits: 3 })), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "mode.permits");
    assert.throws(() => a.require("quorum"), (e: unknown) => e instanceof UnsupportedError && /quorum/.test(e.message));
    assert.equal(a.capabilities.fencing, "create-revision");
    assert.equal(a.bounds().leaseGranularityMs, 1000);
  });
});
