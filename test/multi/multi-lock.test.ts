/**
 * multiLock against a real redis-server: all or nothing, the same keys as a mutex, one lease per
 * set with a token per key, re-entry rules, waits that settle, loss of any key, and overlapping
 * sets from several processes in opposite orders (no deadlock, no overlap).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ClosedError, DeadlockError, InvalidArgumentError, type Lease, LockLostError, LockTimeoutError } from "../../src/index.js";
import { aborted, eventually, Harness, standaloneSuite, startsWaiting, within } from "../helpers/fixtures.js";
import type { RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";
import { scripts } from "../../src/protocol/index.js";

describe("multiLock", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  const holder = async (key: string): Promise<string | null> => (await server.command("HGET", `surelock:{${key}}:lock`, "o")) as string | null;

  it("takes every key or none: a key held by a mutex blocks it, and nothing of the set is taken meanwhile", async () => {
    const locks = h.locks();
    const other = h.locks();
    const b = await other.mutex("b").acquire();
    const set = locks.multiLock(["a", "b", "c"]);
    const waiting = startsWaiting(set.key);
    const pending = set.acquire({ timeout: 10_000 });
    await waiting;
    assert.equal(await holder("a"), null, "a is not taken while b is busy");
    assert.equal(await holder("c"), null);
    await b.release();
    const lease = await within(5_000, pending);
    assert.deepEqual([...lease.fencingTokens.keys()], ["a", "b", "c"]);
    assert.equal(lease.fencingToken, lease.fencingTokens.get("a"), "fencingToken is the first key's");
    assert.ok((lease.fencingTokens.get("b") ?? 0n) > b.fencingToken, "b's token rises past the mutex's");
    assert.equal(lease.key, '["a","b","c"]');
    for (const key of ["a", "b", "c"]) {
      assert.equal(await other.mutex(key).tryAcquire(), null, `a mutex of ${key} is excluded`);
    }
    await lease.release();
    const a = await other.mutex("a").tryAcquire();
    assert.ok(a, "released: the mutex gets it");
    await a.release();
  });

  it("a join by owner trusts the hold for its shortest key's life, not its first key's (issue 24, overlap 2)", async () => {
    // P1 holds [j1, j2] for 1 s (a fixed lease: nobody renews it); P2 joins j1 by owner with a
    // mutex and keeps it alive for 60 s; P3 then joins [j1, j2] by owner. j1 has 60 s left, j2
    // under a second: were P3 told 60 s, its watchdog would renew at 20 s, j2 would expire first
    // and another client take mutex(j2) while P3's lease says held.
    const p1 = h.locks();
    const p2 = h.locks();
    const p3 = h.locks({ ttl: 60_000 });
    const other = h.locks();
    const first = await p1.multiLock(["j1", "j2"]).acquire({ owner: "shared", leaseTime: 1_000 });
    const mutex = await p2.mutex("j1", { ttl: 60_000 }).acquire({ owner: "shared" });
    await mutex.extend(60_000);
    const joined = await p3.multiLock(["j1", "j2"]).acquire({ owner: "shared" });
    assert.deepEqual(joined.fencingTokens, first.fencingTokens, "the same hold");
    // j2 outlives P1's lease only if P3 renews it in time; else it expires and the next client takes it.
    await eventually(async () => {
      const pttl = (await server.command("PTTL", "surelock:{j2}:lock")) as number;
      return pttl < 0 || pttl > 30_000;
    }, 5_000, "j2 expired or renewed");
    const intruder = await other.mutex("j2").tryAcquire();
    assert.ok(!(joined.held && intruder?.held === true), "P3 believes it holds j2 while another client does");
    assert.equal(intruder, null, "P3 renewed j2 in time: its hold stays on every key");
    assert.ok(joined.held);
    await joined.release();
    await mutex.release();
  });

  it("the watchdog refreshes many waiting sets in calls sized by cost: at most 16 two-key waiters per keepalive call (issue 24)", async () => {
    const names = new Map(Object.values(scripts).map((sc) => [sc.sha, sc.name]));
    const perCall: number[] = [];
    const monitor = await h.client().monitor();
    h.onCleanup(() => monitor.disconnect());
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (args[0]?.toUpperCase() === "EVALSHA" && names.get(args[1] ?? "") === "keepalive") perCall.push(args.filter((a) => a === "m").length);
    });
    const held = await h.locks().multiLock(["c1", "c2"]).acquire();
    const locks = h.locks({ ttl: 600, pollInterval: 100 });
    const stop = new AbortController();
    const waiting = Array.from({ length: 40 }, () => locks.multiLock(["c1", "c2"]).acquire({ signal: stop.signal }).catch(() => null));
    // A refresh of every waiter: 40 'm' items (cost 6 each, budget 100) in calls of at most 16.
    await eventually(() => perCall.reduce((n, x) => n + x, 0) >= 80, 10_000, "two rounds of refreshes");
    stop.abort();
    await Promise.all(waiting);
    await held.release();
    const multi = perCall.filter((n) => n > 0);
    assert.ok(multi.length > 0 && multi.every((n) => n <= 16), `waiters per keepalive call: ${multi.join(", ")}`);
    assert.ok(multi.some((n) => n > 1), "calls carry several waiters");
  });

  it("the watchdog weighs a mutex waiter's refresh at three renewals: at most 33 per keepalive call (issue 24)", async () => {
    const names = new Map(Object.values(scripts).map((sc) => [sc.sha, sc.name]));
    const perCall: number[] = [];
    const monitor = await h.client().monitor();
    h.onCleanup(() => monitor.disconnect());
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (args[0]?.toUpperCase() === "EVALSHA" && names.get(args[1] ?? "") === "keepalive") perCall.push(args.filter((a) => a === "q").length);
    });
    const held = await h.locks().mutex("mq").acquire();
    const locks = h.locks({ ttl: 600, pollInterval: 100 });
    const stop = new AbortController();
    const waiting = Array.from({ length: 80 }, () => locks.mutex("mq").acquire({ signal: stop.signal }).catch(() => null));
    // A refresh of every waiter: 80 'q' items (cost 3 each, budget 100) in calls of at most 33.
    await eventually(() => perCall.reduce((n, x) => n + x, 0) >= 160, 10_000, "two rounds of refreshes");
    stop.abort();
    await Promise.all(waiting);
    await held.release();
    const refreshes = perCall.filter((n) => n > 0);
    assert.ok(refreshes.length > 0 && refreshes.every((n) => n <= 33), `waiters per keepalive call: ${refreshes.join(", ")}`);
    assert.ok(refreshes.some((n) => n > 16), "calls carry many waiters");
  });

  it("a flow that holds one of its keys and asks for another is not stuck behind the waiting set", async () => {
    const locks = h.locks();
    const other = h.locks();
    const set = locks.multiLock(["n1", "n2"]);
    let pending: Promise<Lease> | undefined;
    await other.mutex("n2").withLock(async () => {
      const waits = startsWaiting(set.key);
      pending = set.acquire({ timeout: 10_000 });
      await waits;
      // This flow's own order is n2 then n1; the set, which waits for n2, must not keep n1 from it.
      const n1 = await within(2_000, other.mutex("n1").acquire({ timeout: 5_000 }), "n1 while the set waits");
      await n1.release();
    });
    const lease = await within(5_000, pending!, "the set once both are free");
    await lease.release();
  });

  it("a mutex waiter on one of its keys is handed the key at release; another multiLock waits its turn", async () => {
    const locks = h.locks();
    const other = h.locks();
    const lease = await locks.multiLock(["x", "y"]).acquire();
    const mutexWaits = startsWaiting("x");
    const mutexWaiter = other.mutex("x").acquire({ timeout: 10_000 });
    await mutexWaits;
    const second = other.multiLock(["y", "z"]);
    const multiWaits = startsWaiting(second.key);
    const multiWaiter = second.acquire({ timeout: 10_000 });
    await multiWaits;
    await lease.release();
    const [x, yz] = await within(5_000, Promise.all([mutexWaiter, multiWaiter]));
    assert.ok(x.fencingToken > lease.fencingTokens.get("x")!);
    assert.ok(yz.fencingTokens.get("y")! > lease.fencingTokens.get("y")!);
    await Promise.all([x.release(), yz.release()]);
  });

  it("fencing tokens rise per key from one acquisition to the next, in any order of the keys", async () => {
    const locks = h.locks();
    const first = await locks.multiLock(["t1", "t2"]).acquire();
    await first.release();
    const second = await locks.multiLock(["t2", "t1"]).acquire();
    assert.ok(second.fencingTokens.get("t1")! > first.fencingTokens.get("t1")!);
    assert.ok(second.fencingTokens.get("t2")! > first.fencingTokens.get("t2")!);
    assert.equal(second.fencingToken, second.fencingTokens.get("t2"));
    await second.release();
  });

  it("re-enters the same set (in any order) inside withLock; a mutex of one of its keys, or an overlapping set, is a DeadlockError", async () => {
    const locks = h.locks();
    await locks.multiLock(["r1", "r2"]).withLock(async (outer) => {
      const inner = await locks.multiLock(["r2", "r1"]).acquire();
      assert.equal(inner.fencingToken, outer.fencingTokens.get("r2"), "the same hold");
      assert.equal(await server.command("HGET", "surelock:{r1}:lock", "n"), "2");
      await inner.release();
      await assert.rejects(locks.mutex("r1").acquire(), DeadlockError);
      await assert.rejects(locks.multiLock(["r2", "r3"]).acquire(), DeadlockError);
      const disjoint = await locks.multiLock(["r3", "r4"]).acquire({ timeout: 1_000 });
      await disjoint.release();
    });
    await locks.mutex("r1").withLock(async () => {
      await assert.rejects(locks.multiLock(["r1", "r2"]).acquire(), DeadlockError);
    });
    assert.equal(await holder("r1"), null);
  });

  it("a timeout or an abort settles the wait and leaves every queue; the free key is not held back", async () => {
    const locks = h.locks();
    const other = h.locks();
    const busy = await other.mutex("w2").acquire();
    await assert.rejects(locks.multiLock(["w1", "w2"]).acquire({ timeout: 150 }), LockTimeoutError);
    const controller = new AbortController();
    const set = locks.multiLock(["w1", "w2"]);
    const waits = startsWaiting(set.key);
    const pending = set.acquire({ signal: controller.signal });
    await waits;
    controller.abort(new Error("stop"));
    await assert.rejects(within(2_000, pending), /stop/);
    const w1 = await within(2_000, other.mutex("w1").acquire({ timeout: 1_000 }));
    assert.ok(w1, "w1 is free again for a mutex: the ticket left its queue");
    assert.equal(await server.command("LLEN", "surelock:{w2}:queue"), 0);
    await Promise.all([w1.release(), busy.release()]);
  });

  it("close() ends a waiting acquire with ClosedError and leaves every queue", async () => {
    const locks = h.locks();
    const other = h.locks();
    const busy = await other.mutex("z2").acquire();
    const set = locks.multiLock(["z1", "z2"]);
    const waits = startsWaiting(set.key);
    const pending = set.acquire();
    await waits;
    await locks.close();
    await assert.rejects(within(2_000, pending), ClosedError);
    await eventually(async () => Number(await server.command("LLEN", "surelock:{z2}:queue")) === 0, 2_000, "the ticket to leave");
    assert.equal(await server.command("LLEN", "surelock:{z1}:queue"), 0);
    await busy.release();
  });

  it("losing any one key loses the lease: its signal aborts with LockLostError", async () => {
    const locks = h.locks({ ttl: 300 });
    const lease = await locks.multiLock(["l1", "l2"]).acquire();
    await server.command("DEL", "surelock:{l2}:lock");
    const reason = await aborted(lease.signal, 2_000);
    assert.ok(reason instanceof LockLostError);
    await assert.rejects(lease.release(), LockLostError);
    assert.equal(await holder("l1"), null, "what was left of the hold was given back");
  });

  it("extend and isHeld cover every key; close() gives every key back", async () => {
    const locks = h.locks({ ttl: 5_000 });
    const lease = await locks.multiLock(["e1", "e2"]).acquire();
    await lease.extend(60_000);
    for (const key of ["e1", "e2"]) assert.ok(Number(await server.command("PTTL", `surelock:{${key}}:lock`)) > 50_000, `${key} extended`);
    assert.equal(await lease.isHeld(), true);
    await server.command("HSET", "surelock:{e2}:lock", "h", "someone-else");
    assert.equal(await lease.isHeld(), false, "one key held by another hold: not held");
    assert.equal(lease.signal.aborted, true);
    await assert.rejects(lease.release(), LockLostError);
    await server.command("DEL", "surelock:{e2}:lock");
    const kept = await locks.multiLock(["c1", "c2"]).acquire();
    await locks.close();
    assert.equal(kept.signal.aborted, true);
    assert.deepEqual([await holder("c1"), await holder("c2")], [null, null], "close() released both keys");
  });

  it("an explicit owner shares the set's hold across instances, as a mutex's does", async () => {
    const one = h.locks();
    const two = h.locks();
    const first = await one.multiLock(["o1", "o2"]).acquire({ owner: "job-17" });
    const second = await two.multiLock(["o2", "o1"]).acquire({ owner: "job-17", timeout: 1_000 });
    assert.deepEqual([...second.fencingTokens].sort(), [...first.fencingTokens].sort(), "the same hold, the same tokens");
    assert.equal(await server.command("HGET", "surelock:{o1}:lock", "n"), "2");
    const joined = await two.mutex("o1").acquire({ owner: "job-17", timeout: 1_000 });
    assert.equal(joined.fencingToken, first.fencingTokens.get("o1"), "a mutex of one key joins the hold on that key");
    assert.equal(await two.multiLock(["o1", "o2"]).tryAcquire({ owner: "someone" }), null);
    await Promise.all([first.release(), second.release()]);
    assert.equal(await holder("o2"), null, "o2 is free after the set's last entry");
    assert.equal(await holder("o1"), "job-17", "o1 is still held by the mutex's entry");
    await joined.release();
    assert.equal(await holder("o1"), null);
  });

  it("checks its keys before any I/O, naming the argument", () => {
    const locks = h.locks();
    const argument = (fn: () => unknown): string => {
      try {
        fn();
      } catch (error) {
        assert.ok(error instanceof InvalidArgumentError);
        return error.argument;
      }
      return assert.fail("no error");
    };
    assert.equal(argument(() => locks.multiLock([])), "keys");
    assert.equal(argument(() => locks.multiLock("a" as unknown as string[])), "keys");
    assert.equal(argument(() => locks.multiLock(["a", ""])), "keys[1]");
    assert.equal(argument(() => locks.multiLock(["a", "b", "a"])), "keys[2]");
    assert.equal(argument(() => locks.multiLock(["a"], { ttl: 1 })), "options.ttl");
  });

  it("overlapping sets taken in opposite orders by 3 processes never deadlock and never overlap", async () => {
    // Sets that would deadlock if taken key by key: a+b against b+a, and the cycle a+b, b+c, c+a;
    // a mutex of one key, and mutexes nested in one agreed order (a, then b, then c), mixed in.
    const sets = ["{g}:a+{g}:b", "{g}:b+{g}:a", "{g}:b+{g}:c", "{g}:a>{g}:c", "{g}:c+{g}:a", "{g}:a", "{g}:b>{g}:c"];
    const processes = 3, workers = 3, sections = 42;
    const runs = Array.from({ length: processes }, (_, p) =>
      runFixture("multi-worker", [server.port, workers, sections, ...sets.slice(p), ...sets.slice(0, p)]).done);
    const results = await within(60_000, Promise.all(runs), "every worker");
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const seen = new Map<string, { count: number; token: bigint }[]>();
    for (const line of results.flatMap((r) => r.stdout.trim().split("\n"))) {
      for (const part of line.split(" ")) {
        const [key = "", rest = ""] = part.split("=");
        const [count, token] = rest.split(":");
        seen.set(key, [...(seen.get(key) ?? []), { count: Number(count), token: BigInt(token ?? "0") }]);
      }
    }
    for (const [key, list] of seen) {
      assert.equal(Number(await server.command("GET", `counter:${key}`)), list.length, `no lost update on ${key}`);
      list.sort((x, y) => x.count - y.count);
      list.forEach((s, i) => assert.equal(s.count, i + 1, `each count of ${key} written once`));
      for (let i = 1; i < list.length; i++) assert.ok(list[i]!.token > list[i - 1]!.token, `${key}'s token rises in section order`);
    }
    // Each worker takes every set in turn: 2 keys per set but one, 13 key sections per 7 sets.
    assert.equal([...seen.values()].reduce((n, l) => n + l.length, 0), processes * workers * sections * 13 / 7, "every section ran");
  });
});
