// Quorum mode: what a lease needs from the nodes (a majority for extend, isHeld and release;
// release sent to all of them), what a failed attempt leaves behind (nothing), what it costs on
// the wire, and wake-ups and shared primitives over five real redis-server processes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { LockTimeoutError, QuorumError } from "../../src/index.js";
import {
  eventually, heldOn, fastClient, fiveNodes, lockKey, ready, restoreAll, within,
} from "./support.js";

const five = fiveNodes();
const { nodes, clients, quorum, kill } = five;

/** `calls` of one command per node, from INFO commandstats (0 when never called). */
async function callsOf(command: string): Promise<number[]> {
  return Promise.all(nodes.map(async (n) => {
    const stats = await n.info("commandstats");
    return Number(/calls=(\d+)/.exec(stats[`cmdstat_${command}`] ?? "")?.[1] ?? 0);
  }));
}

void describe("quorum mode: extend, isHeld and release need a majority", () => {
  void it("work with two nodes down, fail with QuorumError with three unreachable, and work again after", async () => {
    const key = "lease:majority";
    const locks = quorum(10_000, { commandTimeout: 300 }); // each call with node 0 stopped waits for it
    const lease = await locks.mutex(key).acquire();
    assert.deepEqual(await heldOn(nodes, key), [1, 1, 1, 1, 1]);

    await kill([3, 4]);
    assert.equal(await lease.isHeld(), true);
    await lease.extend();

    await nodes[0]?.pause();
    await assert.rejects(lease.isHeld(), (e: unknown) => e instanceof QuorumError && e.code === "ERR_SURELOCK_QUORUM" && e.nodes.length === 5);
    await assert.rejects(lease.extend(), { code: "ERR_SURELOCK_QUORUM" });
    // Not knowing is not losing: the lease is still valid locally and stays renewed.
    assert.equal(lease.held, true);
    assert.equal(lease.signal.aborted, false);
    await nodes[0]?.resume();
    assert.equal(await lease.isHeld(), true); // nodes 0-2: a majority again

    await nodes[0]?.pause();
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_QUORUM" });
    // It was applied where it arrived (nodes 1, 2); a retry once the nodes are back completes it.
    assert.deepEqual(await heldOn(nodes.slice(1, 3), key), [0, 0]);
    await restoreAll(nodes, clients); // node 0 continues (and applies the queued release); 3 and 4 come back empty
    await lease.release();
    await eventually(2_000, "no lock key left", async () => (await heldOn(nodes, key)).every((e) => e === 0));
    await lease.release(); // a second release is a no-op
  });

  void it("withLock keeps the work's result when its release cannot reach a majority (the lease was still valid)", async () => {
    const key = "lease:withlock-unreachable";
    const locks = quorum(10_000, { commandTimeout: 300 });
    const value = await locks.withLock(key, async (lease) => {
      await Promise.all([0, 1, 2].map((i) => nodes[i]?.pause()));
      assert.equal(lease.held, true);
      return "done";
    });
    assert.equal(value, "done");
    await Promise.all([0, 1, 2].map((i) => nodes[i]?.resume()));
    // The release was queued on the stopped nodes and applied when they continued.
    await eventually(2_000, "no lock key left", async () => (await heldOn(nodes, key)).every((e) => e === 0));
  });

  void it("release goes to every node, not only to a majority", async () => {
    const key = "lease:release-all";
    const locks = quorum(10_000);
    for (const reentrant of [false, true]) {
      const lease = await locks.mutex(key).acquire();
      if (reentrant) {
        // Re-entered inside withLock: the same acquisition, one more entry on every node.
        await locks.mutex(key).withLock(async (inner) => {
          assert.equal(inner.fencingToken, lease.fencingToken);
        }, { owner: lease.owner });
        assert.deepEqual(await heldOn(nodes, key), [1, 1, 1, 1, 1]);
      }
      await lease.release();
      // On every node, not only on the majority that confirmed (the rest would keep it for 10 s).
      await eventually(2_000, "the release to reach every node", async () => (await heldOn(nodes, key)).every((e) => e === 0));
    }
  });
});

void describe("quorum mode: a failed attempt", () => {
  void it("leaves no lock key on any node (busy on a majority, yes on a minority)", async () => {
    const key = "lease:failed-attempt";
    // Another owner holds the lock on nodes 0-2 only (a quorum of its own over three of them).
    const other = quorum(10_000, { redis: clients.slice(0, 3) });
    const held = await other.mutex(key).acquire();
    const locks = quorum(10_000);

    // A reply that missed the per-node timeout (a loaded machine) is undone when it arrives.
    const onlyTheOther = async (): Promise<boolean> => (await heldOn(nodes, key)).join() === "1,1,1,0,0";
    assert.equal(await locks.mutex(key).tryAcquire(), null);
    await eventually(2_000, "only the other owner's keys", onlyTheOther);
    await assert.rejects(locks.mutex(key).acquire({ timeout: 300 }), LockTimeoutError);
    await eventually(2_000, "only the other owner's keys", onlyTheOther);
    for (const n of nodes.slice(0, 3)) assert.equal(await n.command("HGET", lockKey(key), "o"), held.owner);

    await held.release();
    const lease = await locks.mutex(key).tryAcquire();
    assert.ok(lease);
    await lease.release();
  });
});

void describe("quorum mode: the fencing register on the wire", () => {
  void it("the first acquisition writes the largest token back; after that, one EVALSHA per node to acquire and one to release", async () => {
    const key = "lease:wire";
    const locks = quorum(30_000);
    // A new key: each node's counter starts from its own clock, so they differ until written back.
    const first = await locks.mutex(key).acquire();
    const counters = await Promise.all(nodes.map((n) => n.command("HGET", lockKey(key), "c")));
    assert.deepEqual(counters, nodes.map(() => first.fencingToken.toString()));
    await first.release();

    await Promise.all(nodes.map((n) => n.command("CONFIG", "RESETSTAT")));
    const lease = await locks.mutex(key).acquire();
    assert.ok(lease.fencingToken > first.fencingToken);
    await lease.release();
    assert.deepEqual(await callsOf("evalsha"), [2, 2, 2, 2, 2]);
    assert.deepEqual(await callsOf("eval"), [0, 0, 0, 0, 0]);
  });
});

void describe("quorum mode: waiting", () => {
  void it("a waiter is woken by the release announcement with two nodes down, well before its poll", async () => {
    const key = "lease:wake-up";
    await kill([3, 4]);
    // Fresh clients: their wake-up connections are new when the waiter subscribes.
    const fresh = nodes.map((n) => fastClient(n.port));
    try {
      await Promise.all(fresh.slice(0, 3).map((c) => ready(c)));
      const holder = quorum(10_000);
      const waiter = quorum(10_000, { redis: fresh, pollInterval: 60_000 }); // its safety poll would take a minute
      const lease = await holder.mutex(key).acquire();
      const waiting = waiter.mutex(key).acquire({ timeout: 20_000 });
      waiting.catch(() => {}); // awaited below; if an assertion fails first, close() rejects it
      // The waiter found it busy and subscribed on every live node (with fresh clients the first
      // SUBSCRIBE can fail, as their connections are not ready yet: it must be retried).
      const channel = `surelock:{${key}}:wake`;
      await eventually(5_000, "the waiter to subscribe on nodes 0-2", async () =>
        (await Promise.all(nodes.slice(0, 3).map(async (n) => {
          const reply = await n.command("PUBSUB", "NUMSUB", channel);
          return Array.isArray(reply) && Number(reply[1]) >= 1;
        }))).every(Boolean));
      const releasedAt = performance.now();
      await lease.release();
      const next = await within(5_000, waiting, "the waiter to be woken");
      const wokenAfterMs = performance.now() - releasedAt;
      assert.ok(wokenAfterMs < 2_000, `woken ${wokenAfterMs} ms after the release`);
      assert.ok(next.fencingToken > lease.fencingToken);
      await next.release();
    } finally {
      await five.closeAll();
      for (const c of fresh) c.disconnect();
    }
  });
});

void describe("quorum mode: shared primitives", () => {
  void it("a semaphore hands out exactly its permits on a new key, with increasing tokens", async () => {
    const locks = quorum(10_000);
    const sem = locks.semaphore("lease:sem", { permits: 2 });
    const one = await sem.tryAcquire();
    const two = await sem.tryAcquire();
    assert.ok(one && two, "both permits are free");
    assert.ok(two.fencingToken > one.fencingToken);
    assert.equal(await sem.tryAcquire(), null);
    await one.release();
    await two.release();
  });

  void it("a semaphore permit needs more than a majority (4 of 5 nodes for 2 permits): never granted on 3, a mutex still is", async () => {
    // Three holders on {0,1,2}, {2,3,4} and {0,1,3} would each have a majority of five while no
    // node held more than two permits: a majority cannot keep a semaphore's limit.
    const locks = quorum(10_000, { commandTimeout: 300 });
    await kill([3, 4]);
    const sem = locks.semaphore("lease:sem-quorum", { permits: 2 });
    await assert.rejects(sem.tryAcquire(), (e: unknown) => e instanceof QuorumError);
    assert.deepEqual(await heldOn(nodes.slice(0, 3), "lease:sem-quorum"), [0, 0, 0], "nothing left where it was refused");
    const lease = await locks.mutex("lease:mutex-quorum").tryAcquire();
    assert.ok(lease, "a mutex needs only a majority");
    await lease.release();
    await restoreAll(nodes, clients);
    const one = await sem.tryAcquire();
    const two = await sem.tryAcquire();
    assert.ok(one && two, "with every node up, both permits");
    assert.equal(await sem.tryAcquire(), null);
    await one.release();
    await two.release();
  });

  void it("read locks share, a write lock excludes them", async () => {
    const locks = quorum(10_000);
    const rw = locks.readWriteLock("lease:rw");
    const r1 = await rw.read().tryAcquire();
    const r2 = await rw.read().tryAcquire();
    assert.ok(r1 && r2);
    assert.equal(await rw.write().tryAcquire(), null);
    await r1.release();
    await r2.release();
    const w = await rw.write().acquire({ timeout: 5_000 });
    assert.equal(await rw.read().tryAcquire(), null);
    await w.release();
  });
});
