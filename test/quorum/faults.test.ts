// Quorum mode under node faults, with 5 real redis-server processes: a majority down, a node
// partitioned by a TCP proxy, a majority stopped under a held lease, nodes restarted empty.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { LockLostError, LockTimeoutError, QuorumError, type Lease } from "../../src/index.js";
import type { RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import {
  abortedAt, delay, eventually, heldOn, fiveNodes, HOST, lockKey, ready, up, within,
} from "./support.js";

const five = fiveNodes();
const { nodes, clients, quorum, kill } = five;

async function restart(indexes: readonly number[]): Promise<void> {
  await Promise.all(indexes.map(async (i) => {
    await nodes[i]?.restart();
    await ready(clients[i] as Redis);
  }));
}

void describe("quorum mode: a majority of nodes down", () => {
  void it("acquire fails fast with QuorumError naming every node and its error, and leaves no lock key", async () => {
    const locks = quorum(5_000);
    const key = "faults:majority-down";
    await kill([2, 3, 4]);

    const startedAt = performance.now();
    // No timeout: without the fast failure this would wait forever.
    const error = await within(5_000, locks.mutex(key).acquire().then(
      () => assert.fail("acquired with 3 of 5 nodes down"), (e: unknown) => e), "acquire to fail");
    const elapsedMs = performance.now() - startedAt;
    assert.ok(elapsedMs < 2_000, `acquire took ${elapsedMs} ms to fail`);
    assert.ok(error instanceof QuorumError);
    assert.equal(error.code, "ERR_SURELOCK_QUORUM");
    assert.deepEqual(error.nodes.map((n) => n.node), nodes.map((n) => `${HOST}:${n.port}`));
    error.nodes.forEach((outcome, i) => {
      if (i >= 2) {
        assert.equal(outcome.ok, false, `node ${i} is down`);
        assert.ok(outcome.error instanceof Error && outcome.error.message.length > 0, `node ${i} carries its error`);
      } else {
        assert.equal(outcome.ok, true, `node ${i} is up and voted yes`);
      }
    });
    for (const n of nodes.slice(2)) assert.ok(error.message.includes(`${HOST}:${n.port}`));

    // tryAcquire does not answer "busy" (null) either: nobody holds it, the nodes are gone.
    await assert.rejects(locks.mutex(key).tryAcquire(), { code: "ERR_SURELOCK_QUORUM" });
    // The two live nodes gave their part back (awaited; a reply that came late is undone on arrival).
    await eventually(2_000, "no lock key on the live nodes", async () => (await heldOn(up(nodes), key)).every((e) => e === 0));
  });
});

void describe("quorum mode: a node partitioned by a TCP proxy", () => {
  void it("costs at most the per-node timeout, not the client's connect timeout; the majority grants the lease", async () => {
    const proxy = await startFaultProxy({ host: HOST, port: (nodes[4] as RedisServer).port });
    // Default ioredis options here (offline queue, 10 s connect timeout): what a user may well have.
    const viaProxy = new Redis({ host: HOST, port: proxy.port });
    viaProxy.on("error", () => {});
    let lateClient: Redis | undefined;
    try {
      await ready(viaProxy);
      const locks = quorum(5_000, { redis: [...clients.slice(0, 4), viaProxy], commandTimeout: 200 }); // the default: the subject here
      const key = "faults:blackhole";
      await (await locks.mutex(key).acquire()).release(); // scripts cached on every node
      // The release answers at the first deciding majority: the fifth node's part may still be on its way.
      await eventually(2_000, "the first hold released on every node", async () => (await heldOn(nodes, key)).every((e) => e === 0));

      proxy.blackhole();
      let startedAt = performance.now();
      const lease = await within(5_000, locks.mutex(key).acquire(), "acquire with one node blackholed");
      let elapsedMs = performance.now() - startedAt;
      assert.ok(elapsedMs < 2_000, `acquire took ${elapsedMs} ms with one node blackholed`);
      assert.equal(typeof lease.fencingToken, "bigint");
      assert.equal(lease.held, true);
      assert.equal(await lease.isHeld(), true);
      // Held on (at least a majority of) the four direct nodes; the blackholed one never saw the command.
      const held = await heldOn(nodes, key);
      assert.equal(held[4], 0);
      assert.ok(held.filter((e) => e === 1).length >= 3, `held on ${held.join(",")}`);
      await within(2_000, lease.release(), "release with one node blackholed");
      await eventually(2_000, "no lock key left", async () => (await heldOn(nodes, key)).every((e) => e === 0));

      // A client that connects while the partition lasts never becomes ready; still bounded.
      lateClient = new Redis({ host: HOST, port: proxy.port });
      lateClient.on("error", () => {});
      const late = quorum(5_000, { redis: [...clients.slice(0, 4), lateClient], commandTimeout: 200 });
      startedAt = performance.now();
      const second = await within(5_000, late.mutex(key).acquire(), "acquire through a client stuck connecting");
      elapsedMs = performance.now() - startedAt;
      assert.ok(elapsedMs < 2_000, `acquire took ${elapsedMs} ms through a client stuck connecting`);
      await second.release();
    } finally {
      await five.closeAll();
      viaProxy.disconnect();
      lateClient?.disconnect();
      await proxy.close();
    }
  });
});

void describe("quorum mode: lease loss", () => {
  void it("stopping 3 of 5 nodes (SIGSTOP) under a held lease aborts lease.signal before the ttl runs out", async () => {
    const ttl = 1_500;
    const locks = quorum(ttl, { commandTimeout: 200 });
    const key = "faults:majority-stopped";
    const startedAt = performance.now();
    const lease = await locks.mutex(key).acquire();
    await Promise.all([0, 1, 2].map((i) => nodes[i]?.pause()));

    const lostAt = await abortedAt(lease.signal, 5_000);
    assert.ok(lostAt - startedAt < ttl, `aborted ${lostAt - startedAt} ms after the acquire was sent (ttl ${ttl})`);
    const reason: unknown = lease.signal.reason;
    assert.ok(reason instanceof LockLostError);
    assert.equal(reason.code, "ERR_SURELOCK_LOCK_LOST");
    assert.equal(reason.reason, "unreachable");
    assert.equal(lease.held, false);
    // The client gave up while Redis still had the lock: on the live nodes it has not expired yet.
    assert.deepEqual(await heldOn(nodes.slice(3), key), [1, 1]);

    await Promise.all([0, 1, 2].map((i) => nodes[i]?.resume()));
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });
});

void describe("quorum mode: nodes restarted empty (no persistence), restart delayed by one ttl", () => {
  void it("a lease held across two delayed restarts keeps out every other owner, and stays valid", async () => {
    const ttl = 2_000; // the lease must survive this test's restarts, even on a loaded machine
    const key = "faults:delayed-restart";
    const holder = quorum(ttl);
    const other = quorum(ttl);
    const lease = await holder.mutex(key).acquire();
    for (const i of [0, 1]) {
      await kill([i]);
      await delay(ttl); // the documented operating rule: a node that lost its data stays out one ttl
      await restart([i]);
      await assert.rejects(other.mutex(key).acquire({ timeout: 300 }), LockTimeoutError);
    }
    // Nodes 0 and 1 came back empty; nodes 2-4 still hold it: a majority. (The other owner's
    // tries that got node 0 or 1 are undone; one whose reply came late is undone when it arrives.)
    assert.deepEqual(await heldOn(nodes.slice(2), key), [1, 1, 1]);
    await eventually(2_000, "the other owner's tries to be undone", async () =>
      (await heldOn(nodes.slice(0, 2), key)).every((e) => e === 0));
    await assert.rejects(other.mutex(key).acquire({ timeout: 500 }), LockTimeoutError);
    assert.equal(lease.signal.aborted, false);
    assert.equal(await lease.isHeld(), true);

    await lease.release();
    await eventually(2_000, "the release to reach every node", async () => (await heldOn(nodes, key)).every((e) => e === 0));
    const next = await other.mutex(key).tryAcquire();
    assert.ok(next);
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
  });

  void it("a lease on a bare majority whose node crashed: the next owner gets in only after the first lease aborted", async () => {
    const ttl = 1_000;
    const key = "faults:bare-majority";
    const first = quorum(ttl);
    const second = quorum(ttl);
    await kill([3, 4]);
    const lease = await first.mutex(key).acquire(); // on nodes 0, 1, 2 only
    let firstLostAt: number | undefined;
    lease.signal.addEventListener("abort", () => { firstLostAt = performance.now(); }, { once: true });

    await kill([0]); // loses the first owner's key there
    const crashedAt = performance.now();
    await restart([3, 4]);
    let secondAt: number | undefined;
    const waiting = second.mutex(key).acquire({ timeout: 10_000 }).then((l: Lease) => {
      secondAt = performance.now();
      return l;
    });
    waiting.catch(() => {}); // awaited below (after the restart); never unobserved meanwhile
    await delay(Math.max(0, ttl - (performance.now() - crashedAt))); // node 0 stays out one ttl
    await restart([0]);
    const next = await within(12_000, waiting, "the second owner to get the lock");

    assert.ok(firstLostAt !== undefined && secondAt !== undefined, "the first lease aborted before the second was granted");
    assert.ok(firstLostAt <= secondAt);
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });
});

void describe("quorum mode: fencing tokens while nodes go down and come back", () => {
  void it("tokens strictly increase across holders, and a majority of counters carries each token", async () => {
    const key = "faults:fencing";
    const a = quorum(10_000);
    const b = quorum(10_000);
    const tokens: bigint[] = [];
    let turn = 0;

    /** One holder (alternating instances) takes and gives back the lock; checks the register. */
    const hold = async (step: string): Promise<void> => {
      const lease = await within(5_000, (turn++ % 2 === 0 ? a : b).mutex(key).acquire(), `acquire (${step})`);
      const previous = tokens.at(-1);
      assert.ok(previous === undefined || lease.fencingToken > previous, `${step}: ${lease.fencingToken} is not above ${previous}`);
      tokens.push(lease.fencingToken);
      // The quorum register: a majority of the counters is at least this token.
      const counters = await Promise.all(up(nodes).map(async (n) => BigInt(String((await n.command("HGET", lockKey(key), "c")) ?? "0"))));
      assert.ok(counters.filter((c) => c >= lease.fencingToken).length >= 3, `${step}: counters ${counters.join(", ")} below ${lease.fencingToken}`);
      await lease.release();
    };

    await hold("all up");
    await hold("all up, again");
    await kill([4]);
    await hold("node 4 down");
    await kill([3]);
    await hold("nodes 3, 4 down");
    await restart([4]); // empty: its counter restarts (from the server clock)
    assert.equal(await nodes[4]?.command("HGET", lockKey(key), "c"), null);
    await hold("node 4 back empty");
    await nodes[0]?.pause(); // node 0 misses the next raises and falls behind
    await restart([3]); // empty again: its fresh counter is ahead of everyone's
    await hold("node 0 stopped, node 3 back empty");
    await hold("node 0 stopped");
    await nodes[0]?.resume();
    await ready(clients[0] as Redis);
    const counterOf = async (n: RedisServer): Promise<bigint> => BigInt(String(await n.command("HGET", lockKey(key), "c")));
    const others = await Promise.all(nodes.slice(1).map(counterOf));
    assert.ok((await counterOf(nodes[0] as RedisServer)) < others.reduce((x, y) => (x > y ? x : y)), "node 0 is behind");
    await hold("node 0 back, behind the others");
    await kill([1, 2]);
    await hold("nodes 1, 2 down");
    await restart([1, 2]);
    await hold("all back, two of them empty");
    assert.equal(tokens.length, 10);
  });
});
