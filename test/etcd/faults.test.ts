// The etcd store under real faults: a client cut off from the cluster (its keep-alives stall past
// the TTL), a cluster nobody can reach, the leader killed under contention, a watch revision compacted.
// Every await is bounded (a test that fails says where, and the file never hangs), and any uncaught
// error fails the file: the store must not trigger one, whatever the cluster does.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClosedError, ConnectionError, LockLostError, LockTimeoutError } from "../../src/errors.js";
import type { Held } from "../../src/etcd/index.js";
import { aborted, within } from "../helpers/fixtures.js";
import { FilterType, type IWatchResponse } from "etcd3";
import { fresh, startWorld, uid, waitersReach, type EtcdWorld } from "./support.js";

/** Each test's own bound: past it the runner fails the test and goes on (the hooks are bounded too). */
const T = { timeout: 90_000 };

describe("etcd store: faults on a 3-member cluster", () => {
  let world: EtcdWorld;
  before(async () => {
    world = await startWorld();
  });
  after(() => world?.stop());

  it("a keep-alive stalled past the TTL: the loss fires at held-until, before anyone else gets the lock", T, async () => {
    const cut = world.store({ members: [0] });
    const other = world.store({ members: [1, 2] });
    const name = uid("stall/");
    const held = await within(10_000, cut.acquire(fresh(name)), "the first acquire");
    const waiting = other.acquire(fresh(name, { timeoutMs: 20_000 })).then((h) => ({ h, at: performance.now() }));
    world.cluster.members[0]!.proxy.blackhole();
    // No acknowledgement gets through from here on: held-until stays where it is. A timer of the
    // test's own, due then, says how late this loaded machine runs timers (the store cannot beat it).
    const due = held.heldUntil();
    const probe = new Promise<number>((resolve) => setTimeout(() => resolve(performance.now()), Math.max(0, due - performance.now())));
    try {
      const reason = await aborted(held.signal, 10_000);
      const lostAt = performance.now();
      const until = held.heldUntil();
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.ok(["unreachable", "expired"].includes(reason.reason));
      assert.equal(until, due, "held-until did not move after the cut");
      assert.ok(lostAt >= until - 5, `not before held-until (${(until - lostAt).toFixed(0)} ms early)`);
      const timersRan = await within(10_000, probe, "the probe timer");
      assert.ok(lostAt - timersRan < 500, `on time: ${(lostAt - until).toFixed(0)} ms after held-until, ${(lostAt - timersRan).toFixed(0)} ms after a timer due then`);
      const next = await within(15_000, waiting, "the other store's grant");
      assert.ok(next.at > lostAt, "no overlap: the next holder came after the loss");
      assert.ok(next.h.ref.token > held.ref.token);
      await within(5_000, other.release(next.h.ref, next.h.ref.hold), "the release");
    } finally {
      world.cluster.members[0]!.proxy.heal("drop");
    }
  });

  it("an unreachable cluster: a ConnectionError within the request bound, never a hang", T, async () => {
    const s = world.store({ members: [0, 1, 2], requestTimeoutMs: 800 });
    for (const m of world.cluster.members) m.proxy.blackhole();
    try {
      const started = performance.now();
      await within(8_000, assert.rejects(s.acquire(fresh(uid("down/"), { timeoutMs: 60_000 })), ConnectionError), "the acquire");
      assert.ok(performance.now() - started < 4_000, `bounded (${(performance.now() - started).toFixed(0)} ms)`);
    } finally {
      for (const m of world.cluster.members) m.proxy.heal("drop");
    }
  });

  it("a waiter on a lease of its own, with no timeout, cut off from the cluster: LockLostError (expired) at its leaseTime, never a hang", T, async () => {
    const holder = world.store({ members: [1, 2] });
    const cut = world.store({ members: [0], requestTimeoutMs: 800, recheckMs: 300 });
    const name = uid("own-cut/");
    const h = await within(5_000, holder.acquire(fresh(name)), "the holder's acquire");
    const waiting = cut.acquire(fresh(name, { timeoutMs: Infinity, leaseTimeMs: 2_000 }));
    waiting.catch(() => undefined);
    await waitersReach(holder, name, 1);
    world.cluster.members[0]!.proxy.blackhole();
    try {
      await within(10_000, assert.rejects(waiting, (e: unknown) => e instanceof LockLostError && e.reason === "expired"), "the waiter's failure");
    } finally {
      world.cluster.members[0]!.proxy.heal("drop");
    }
    await within(5_000, holder.release(h.ref, h.ref.hold), "the release");
  });

  it("the leader killed under contention: no two holders at once, fenced counter exact, tokens rising", T, async () => {
    const stores = [world.store(), world.store(), world.store()];
    const name = uid("leader/");
    const counter = uid("counter/");
    const client = world.client();
    await within(10_000, client.put(counter).value("0").exec(), "the counter's first write");
    // Who is inside now: a second holder while the first still trusts its hold is an overlap.
    let current: Held | undefined;
    let overlaps = 0;
    const failures: unknown[] = [];
    const readFailures: unknown[] = [];
    // The workers stop on the wall clock, whatever the cluster does (the test must end even if the
    // fault flow stalls); the checks are about safety, and a rate would only measure the machine.
    const stopAt = performance.now() + 6_000;
    const more = (): boolean => performance.now() < stopAt;
    // What each worker is doing, for the message when they do not finish.
    const phase: string[] = [];
    const read = async (): Promise<number> => {
      const res = await client.kv.range({ key: Buffer.from(counter) }, { deadline: new Date(Date.now() + 2_000) });
      return Number(res.kvs[0]!.value.toString());
    };
    const worker = async (i: number): Promise<void> => {
      const store = stores[i % stores.length]!;
      while (more()) {
        let h: Held;
        phase[i] = "acquire";
        try {
          h = await store.acquire(fresh(name, { timeoutMs: 10_000 }));
        } catch (error) {
          failures.push(error);
          // A refusal can come at once (the client's circuit breaker): yield to timers before retrying.
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        if (current && !current.signal.aborted) overlaps++;
        current = h;
        try {
          phase[i] = "read";
          const value = await read().catch((e: unknown) => {
            readFailures.push(e);
            throw e;
          });
          phase[i] = "fenced";
          // A second key per write, with its token: a write whose reply is lost still counts.
          await store.fenced(h.ref, [
            { request_put: { key: Buffer.from(counter), value: Buffer.from(String(value + 1)) } },
            { request_put: { key: Buffer.from(`${counter}/${h.ref.hold}`), value: Buffer.from(h.ref.token.toString()) } },
          ]);
        } catch (error) {
          failures.push(error);
        } finally {
          if (current === h) current = undefined;
        }
        phase[i] = "release";
        await store.release(h.ref, h.ref.hold).catch((e: unknown) => failures.push(e));
      }
      phase[i] = "done";
    };
    const workers = Array.from({ length: 6 }, (_, i) => worker(i));
    // The fault flow, each step bounded; the workers are awaited whatever happened to it.
    const faults = (async () => {
      await new Promise((r) => setTimeout(r, 1_500));
      const leader = await within(25_000, world.cluster.leader(), "finding the leader");
      await within(15_000, leader.kill(), "killing the leader");
      await new Promise((r) => setTimeout(r, 1_500));
      await within(30_000, leader.restart(), "restarting the old leader");
    })();
    const [flow, work] = await Promise.allSettled([faults, within(40_000, Promise.all(workers), "the workers")]);
    const kinds = (list: unknown[]): string => [...new Set(list.map((e) => (e instanceof Error ? `${e.name}: ${e.message.slice(0, 120)}` : String(e))))].slice(0, 6).join(" | ");
    if (flow.status === "rejected") throw flow.reason;
    if (work.status === "rejected") throw new Error(`${String(work.reason)}; phases: ${phase.join(", ")}; failures: ${kinds(failures)}`);
    const landed = (await within(10_000, client.kv.range({ key: Buffer.from(`${counter}/`), range_end: Buffer.from(`${counter}0`), sort_target: "Create", sort_order: "Ascend" }), "reading the fenced writes")).kvs;
    const done = landed.length;
    const tokens = landed.map((kv) => BigInt(kv.value.toString()));
    assert.equal(overlaps, 0, "never two holders");
    assert.ok(done > 0, `progress (${done} sections; ${failures.length} failures: ${kinds(failures)})`);
    assert.equal(Number(await within(10_000, client.get(counter).string(), "reading the counter")), done, "every fenced write counted once");
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, "tokens rise in commit order");
    for (const f of failures.filter((x) => !readFailures.includes(x))) {
      // A timeout is typed too: on a loaded machine a waiter can spend its 10 s behind the election.
      assert.ok(f instanceof ConnectionError || f instanceof LockLostError || f instanceof LockTimeoutError, `typed failure: ${String(f)}`);
    }
  });

  it("a watch from a compacted revision fails rather than staying silent (the store then re-reads the queue)", T, async () => {
    const client = world.client();
    const key = uid("compact/");
    const first = await within(5_000, client.put(key).value("1").exec(), "a put");
    await within(5_000, client.put(key).value("2").exec(), "a put");
    const latest = await within(5_000, client.put(key).value("3").exec(), "a put");
    await within(5_000, client.kv.compact({ revision: latest.header.revision, physical: true }), "the compaction");
    // The store's own kind of watch: a raw Watch stream, one create request from an explicit revision.
    const stream = await within(5_000, client.watchClient.watch(), "opening a watch stream");
    const answer = new Promise<IWatchResponse>((resolve, reject) => {
      stream.on("data", (res) => {
        if (res.canceled) resolve(res);
      });
      stream.on("error", reject);
    });
    stream.write({ create_request: { key: Buffer.from(key), start_revision: first.header.revision, filters: [FilterType.Noput] } });
    try {
      const res = await within(5_000, answer, "the watch's cancel");
      assert.ok(BigInt(res.compact_revision) > BigInt(first.header.revision), `compacted at ${res.compact_revision}`);
    } finally {
      stream.end();
      stream.cancel();
    }
    // A waiter whose queue was written, compacted and released still gets the lock.
    const s = world.store();
    const name = uid("compact-lock/");
    const h = await within(5_000, s.acquire(fresh(name)), "the first acquire");
    const w2 = s.acquire(fresh(name, { timeoutMs: 10_000 }));
    await waitersReach(s, name, 1);
    const now = await within(5_000, client.put(uid("bump/")).value("x").exec(), "a put");
    await within(5_000, client.kv.compact({ revision: now.header.revision, physical: true }), "the compaction");
    await within(5_000, s.release(h.ref, h.ref.hold), "the release");
    const next = await within(5_000, w2, "the waiter");
    await within(5_000, s.release(next.ref, next.ref.hold), "the waiter's release");
  });

  it("a waiter whose lease ends while it waits never becomes a holder (ownership is read again after the wake-up)", T, async () => {
    const holder = world.store();
    const waiter = world.store();
    const third = world.store();
    const name = uid("revoked/");
    const h = await within(5_000, holder.acquire(fresh(name)), "the holder's acquire");
    const waiting = waiter.acquire(fresh(name, { timeoutMs: 20_000 }));
    await waitersReach(holder, name, 1);
    const lease = (await within(5_000, holder.inspect(name), "an inspect")).waiters[0]!.lease;
    // The waiter's lease ends in etcd (as if it expired there); its holder then frees the lock.
    await within(5_000, world.client().leaseClient.leaseRevoke({ ID: lease }), "the revoke");
    await within(5_000, holder.release(h.ref, h.ref.hold), "the release");
    await within(10_000, assert.rejects(waiting, (e: unknown) => e instanceof LockLostError && e.reason === "expired"), "the waiter's failure");
    const next = await within(10_000, third.acquire(fresh(name, { timeoutMs: 5_000 })), "the third store's acquire");
    const info = await within(5_000, third.inspect(name), "an inspect");
    assert.deepEqual(info.holders.map((x) => x.hold), [next.ref.hold], "the third store alone holds it");
    await within(5_000, third.release(next.ref, next.ref.hold), "the release");
  });

  it("a member cut off from its clients: a waiter still gets the lock (re-reads do not wait for a silent watch)", T, async () => {
    const holder = world.store({ members: [1, 2] });
    const waiter = world.store({ sessionTtlMs: 10_000, requestTimeoutMs: 1_000, recheckMs: 500 });
    const name = uid("cut/");
    const h = await within(5_000, holder.acquire(fresh(name)), "the holder's acquire");
    const waiting = waiter.acquire(fresh(name, { timeoutMs: 30_000 }));
    await waitersReach(holder, name, 1);
    world.cluster.members[0]!.proxy.blackhole();
    try {
      await within(5_000, holder.release(h.ref, h.ref.hold), "the release");
      const got = await within(20_000, waiting, "the waiter's grant");
      assert.ok(got.ref.token > h.ref.token);
      await within(5_000, waiter.release(got.ref, got.ref.hold), "the waiter's release").catch(() => undefined);
    } finally {
      world.cluster.members[0]!.proxy.heal("drop");
    }
  });

  it("close() ends every hold and pending acquire with ClosedError, and frees the keys", T, async () => {
    const s = world.store();
    const other = world.store();
    const name = uid("close/");
    const h = await within(5_000, s.acquire(fresh(name)), "an acquire");
    const blocked = uid("close-b/");
    const bh = await within(5_000, other.acquire(fresh(blocked)), "an acquire");
    const pending = s.acquire(fresh(blocked, { timeoutMs: 20_000 })).then(() => undefined, (e: unknown) => e);
    await waitersReach(other, blocked, 1);
    await within(5_000, s.close(), "close()");
    assert.ok((await aborted(h.signal, 1_000)) instanceof ClosedError);
    assert.ok((await within(1_000, pending, "the pending acquire")) instanceof ClosedError);
    await assert.rejects(within(1_000, s.acquire(fresh(name)), "an acquire after close()"), ClosedError);
    const next = await within(5_000, other.acquire(fresh(name, { timeoutMs: 0 })), "an acquire");
    assert.equal((await within(5_000, other.inspect(blocked), "an inspect")).waiters.length, 0, "the pending waiter's key went with the session");
    await within(5_000, other.release(next.ref, next.ref.hold), "a release");
    await within(5_000, other.release(bh.ref, bh.ref.hold), "a release");
  });
});
