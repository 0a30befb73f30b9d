// Coordination primitives on a quorum whose majority rule composes: three clients, each reaching
// three real redis-servers through proxies of its own, and each, in turn, cut off from a
// different node. Every operation that resolved was acknowledged by a majority, but by a
// different one each time; what they did together must still count on every majority read.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import { LockLostError, QuorumError, Surelock, type Lease } from "../../src/index.js";
import { aborted } from "../helpers/fixtures.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startPrimaries, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { Observed } from "../election/support.js";
import { assertEveryKeyExpires, eventually, fastClient, ready, within } from "./support.js";

const CLIENTS = 3;

interface World {
  readonly nodes: RedisServer[];
  /** proxies[c][n]: client c's link to node n. */
  readonly proxies: FaultProxy[][];
  /** redis[c][n]: client c's connection to node n. */
  readonly redis: Redis[][];
  /** locks[c]: client c's Surelock, over its own links; the last one: a client whose links stay up. */
  readonly locks: Surelock[];
  close(): Promise<void>;
}

after(stopAll);

/** `n` primaries, and `clients` clients (plus one more whose links are never cut), each over proxies of its own. */
async function world(n = 3, clients = CLIENTS, ttl?: number): Promise<World> {
  const nodes = await startPrimaries(n);
  const proxies: FaultProxy[][] = [];
  const redis: Redis[][] = [];
  const locks: Surelock[] = [];
  for (let c = 0; c <= clients; c++) {
    const mine = await Promise.all(nodes.map((node) => startFaultProxy({ host: node.host, port: node.port })));
    proxies.push(mine);
    // A command that timed out in a cut is not sent again after the link is healed: what the cut
    // kept from a node stays missing there, as the tests assert.
    const own = mine.map((p) => fastClient(p.port, { autoResendUnfulfilledCommands: false }));
    await Promise.all(own.map((cl) => ready(cl)));
    redis.push(own);
    locks.push(new Surelock({ redis: own, commandTimeout: 300, ...(ttl !== undefined && { ttl }) }));
  }
  return {
    nodes, proxies, redis, locks,
    async close() {
      await Promise.all(locks.map((l) => l.close()));
      for (const cl of redis.flat()) cl.disconnect();
      for (const p of proxies.flat()) await p.close();
      for (const node of nodes) await assertEveryKeyExpires([node]);
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
}

/**
 * Cuts client `c` off from `nodes`; the returned function heals the links. Bytes a blackhole
 * swallowed leave a connection's replies out of step, so healing resets the connections and
 * waits until the client is connected again.
 */
function cut(w: World, c: number, nodes: readonly number[]): () => Promise<void> {
  for (const n of nodes) (w.proxies[c]?.[n] as FaultProxy).blackhole();
  return async () => {
    await Promise.all(nodes.map(async (n) => {
      const link = w.proxies[c]?.[n] as FaultProxy;
      const client = w.redis[c]?.[n] as Redis;
      const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
      link.heal("reset");
      await within(5_000, closed, `client ${c}'s connection to node ${n} to close`);
      await ready(client);
    }));
  };
}

/** Runs `op` as client `c` while its links to `nodes` (default: node `c`) swallow everything. */
async function cutOff<T>(w: World, c: number, op: (locks: Surelock) => Promise<T>, nodes: readonly number[] = [c]): Promise<T> {
  const heal = cut(w, c, nodes);
  try {
    return await op(w.locks[c] as Surelock);
  } finally {
    await heal();
  }
}

void describe("quorum mode: coordination primitives survive one node cut off from each client in turn", () => {
  void it("a latch of count 3: three count downs, each acknowledged by a different majority, open it for every client", async () => {
    const w = await world();
    try {
      const waits = w.locks.map((l) => l.latch("q:latch", { count: 3 }).wait({ timeout: 15_000 }));
      // Settled in any case, so that a failure below is the one reported.
      const opened = Promise.allSettled(waits);
      for (let c = 0; c < CLIENTS; c++) {
        await cutOff(w, c, (l) => l.latch("q:latch", { count: 3 }).countDown());
      }
      // Each node counted two of the three (nodes at 1, 1, 1): "a majority at 0" would never hold.
      for (const n of w.nodes) assert.equal(await n.command("HGET", "surelock:latch:{q:latch}:state", "c"), "1");
      const outcomes = await within(10_000, opened, "every client's wait() to settle");
      assert.deepEqual(outcomes.map((o) => o.status), w.locks.map(() => "fulfilled"));
      for (const l of w.locks) assert.equal(await l.latch("q:latch", { count: 3 }).count(), 0);
    } finally {
      await w.close();
    }
  });
});

/** Each node's count of used permits of semaphore `key`, in node order. */
const usedOn = (w: World, key: string): Promise<number[]> =>
  Promise.all(w.nodes.map(async (n) => Number(await n.command("HGET", `surelock:sem:{${key}}:state`, "u"))));

/** 1 where node n holds election `name`'s lock, 0 elsewhere. */
const heldOn = (nodes: readonly RedisServer[], name: string): Promise<number[]> =>
  Promise.all(nodes.map(async (n) => Number(await n.command("HEXISTS", `surelock:election:{${name}}:lock`, "o"))));

void describe("quorum mode: elections under one node cut off (3 nodes)", () => {
  void it("the newest proclaim that resolved is what every majority reads; a resigned leader is named by none; the next one is elected", async () => {
    const w = await world(3, CLIENTS, 1_500);
    try {
      const watcher = new Observed((w.locks[CLIENTS] as Surelock).election("q:e1"));
      const lead = (w.locks[0] as Surelock).election("q:e1");
      const la = await within(5_000, lead.campaign({ value: "a" }), "a's campaign");
      // Reaches nodes 1 and 2 only: node 0 still shows "a" (the first proclaim, seq 1).
      await cutOff(w, 0, () => lead.proclaim("a2"));
      assert.deepEqual(await Promise.all(w.nodes.map((n) => n.command("HGET", "surelock:election:{q:e1}:lock", "v"))), ["a", "a2", "a2"]);
      for (let c = 0; c < CLIENTS; c++) {
        // Client 2 reads nodes 0 and 1: "a" on the first node it asks, "a2" on the other.
        const seen = await cutOff(w, c, (l) => l.election("q:e1").leader());
        assert.deepEqual([seen?.owner, seen?.value, seen?.fencingToken], [la.owner, "a2", la.fencingToken], `client ${c}, cut off from node ${c}`);
      }
      await watcher.next((l) => l?.value === "a2");
      // Released on nodes 0 and 2 (a majority): node 1 keeps the hold until its ttl.
      await cutOff(w, 0, () => lead.resign(), [1]);
      assert.deepEqual(await heldOn(w.nodes, "q:e1"), [0, 1, 0]);
      for (let c = 0; c < CLIENTS; c++) {
        assert.equal(await cutOff(w, c, (l) => l.election("q:e1").leader()), null, `client ${c}, cut off from node ${c}`);
      }
      await watcher.next((l) => l === null);
      // Cut off from node 2, b needs node 1, where a's hold stands until it expires.
      const lb = await cutOff(w, 2, (l) => within(10_000, l.election("q:e1").campaign({ value: "b" }), "b's campaign"));
      assert.ok(lb.fencingToken > la.fencingToken);
      const seen = await (w.locks[CLIENTS] as Surelock).election("q:e1").leader();
      assert.deepEqual([seen?.owner, seen?.value], [lb.owner, "b"]);
      await watcher.next((l) => l?.value === "b");
      await lb.release();
      await watcher.stop();
    } finally {
      await w.close();
    }
  });

  void it("a proclaim that rejected with QuorumError is named by no read, not even one that meets the node it reached", async () => {
    const w = await world(3, CLIENTS, 3_000);
    try {
      const watcher = new Observed((w.locks[CLIENTS] as Surelock).election("q:e3"));
      const lead = (w.locks[0] as Surelock).election("q:e3");
      const la = await within(5_000, lead.campaign({ value: "a" }), "a's campaign");
      await within(5_000, lead.proclaim("a2"), "a2's proclaim");
      // It resolved at the first majority; the third node's calls are still on their way.
      await eventually(5_000, "a2 kept on every node", async () =>
        (await Promise.all(w.nodes.map((n) => n.command("HGET", "surelock:election:{q:e3}:lock", "ks")))).every((ks) => ks === "2"));
      // Reaches node 0 alone: fewer than a majority, so it rejects.
      await assert.rejects(cutOff(w, 0, () => lead.proclaim("a3"), [1, 2]), QuorumError);
      assert.deepEqual(await Promise.all(w.nodes.map((n) => n.command("HGET", "surelock:election:{q:e3}:lock", "v"))), ["a3", "a2", "a2"]);
      assert.ok(la.held, "the leadership outlived the short cut");
      for (let c = 0; c < CLIENTS; c++) {
        // Clients 1 and 2 read node 0, which shows "a3" as its newest.
        const seen = await cutOff(w, c, (l) => l.election("q:e3").leader());
        assert.deepEqual([seen?.owner, seen?.value], [la.owner, "a2"], `client ${c}, cut off from node ${c}`);
      }
      const everyone = await (w.locks[CLIENTS] as Surelock).election("q:e3").leader();
      assert.equal(everyone?.value, "a2", "a reader of all three nodes");
      // The next proclaim that resolves is read at once, everywhere.
      await within(5_000, lead.proclaim("a4"), "a4's proclaim");
      for (let c = 0; c < CLIENTS; c++) {
        assert.equal((await cutOff(w, c, (l) => l.election("q:e3").leader()))?.value, "a4", `client ${c}, cut off from node ${c}`);
      }
      await watcher.next((l) => l?.value === "a4");
      assert.ok(!watcher.seen.some((l) => l?.value === "a3"), `observe() named the rejected value: ${JSON.stringify(watcher.seen.map((l) => l?.value))}`);
      await la.release();
      await watcher.stop();
    } finally {
      await w.close();
    }
  });

  void it("no two leaders believed at once: a leader cut off from a majority has lost its lease when another is elected", async () => {
    const w = await world(3, CLIENTS, 1_500);
    try {
      const la = await within(5_000, (w.locks[0] as Surelock).election("q:e2").campaign({ value: "a" }), "a's campaign");
      const heal = cut(w, 0, [1, 2]);
      try {
        const lb = await within(10_000, (w.locks[1] as Surelock).election("q:e2").campaign({ value: "b" }), "b's campaign");
        // b can win only once a's hold ran out on nodes 1 and 2, after a's own validity ended.
        assert.equal(la.held, false, "a still believed it led when b was elected");
        assert.ok(lb.held);
        assert.ok(lb.fencingToken > la.fencingToken);
        await aborted(la.signal, 5_000);
        const seen = await (w.locks[2] as Surelock).election("q:e2").leader();
        assert.deepEqual([seen?.owner, seen?.value], [lb.owner, "b"]);
        await lb.release();
      } finally {
        await heal();
      }
      await assert.rejects(la.release(), LockLostError);
    } finally {
      await w.close();
    }
  });
});

void describe("quorum mode: semaphores under a node cut off", () => {
  void it("3 nodes, 1 permit (a majority): each client cut off from its node in turn takes it, never beside another; 2 permits (all 3 nodes) are refused with QuorumError", async () => {
    const w = await world(3, CLIENTS);
    try {
      for (let c = 0; c < CLIENTS; c++) {
        await cutOff(w, c, async (l) => {
          const permit = await within(5_000, l.semaphore("q:s1", { permits: 1 }).acquire({ timeout: 4_000 }), `client ${c}'s permit`);
          assert.equal(await (w.locks[CLIENTS] as Surelock).semaphore("q:s1", { permits: 1 }).tryAcquire(), null);
          assert.ok((await usedOn(w, "q:s1")).every((u) => u <= 1));
          await permit.release();
        });
      }
      // A permit of 2 counts only on all three nodes (docs/quorum.md): with one cut off, none is handed out.
      const started = performance.now();
      await cutOff(w, 0, (l) => assert.rejects(l.semaphore("q:s2", { permits: 2 }).tryAcquire(),
        (e: unknown) => e instanceof QuorumError && e.needed === 3 && /reached 2 of 3 nodes, 3 needed/.test(e.message)));
      assert.ok(performance.now() - started < 10_000);
      const whole = await (w.locks[CLIENTS] as Surelock).semaphore("q:s2", { permits: 2 }).tryAcquire();
      assert.ok(whole);
      await whole.release();
    } finally {
      await w.close();
    }
  });

  void it("5 nodes: 2 permits (4 nodes each) with one node cut from each client: never 3 holders; with 2 cut, refused; a mutex, 1 permit and an election go on", async () => {
    const w = await world(5, CLIENTS, 3_000);
    try {
      const sem = (c: number) => (w.locks[c] as Surelock).semaphore("q:s5", { permits: 2 });
      const restores = [0, 1, 2].map((c) => cut(w, c, [c]));
      const held: Lease[] = [];
      try {
        // All three at once, each reaching four nodes: never three permits (one attempt each may
        // also split the nodes between them and leave fewer).
        const tries = await Promise.all([0, 1, 2].map(async (c) => [c, await sem(c).tryAcquire()] as const));
        const holders = new Set<number>();
        for (const [c, p] of tries) {
          if (!p) continue;
          held.push(p);
          holders.add(c);
        }
        assert.ok(held.length <= 2, `${held.length} permits of 2 handed out`);
        assert.ok((await usedOn(w, "q:s5")).every((u) => u <= 2));
        // The others wait their turn: permits go to them until two are held, a third to nobody.
        for (const c of [0, 1, 2]) {
          if (holders.has(c) || held.length === 2) continue;
          held.push(await within(5_000, sem(c).acquire({ timeout: 4_000 }), `client ${c}'s permit`));
          holders.add(c);
        }
        assert.equal(held.length, 2);
        assert.ok((await usedOn(w, "q:s5")).every((u) => u <= 2));
        assert.equal(await sem(CLIENTS).tryAcquire(), null);
        const third = [0, 1, 2].find((c) => !holders.has(c)) as number;
        assert.equal(await sem(third).tryAcquire(), null);
      } finally {
        for (const heal of restores) await heal();
      }
      for (const p of held) await p.release();
      // Cut off from two nodes: a 2-permit semaphore cannot reach its 4; a majority's primitives can.
      await cutOff(w, 0, async (l) => {
        await assert.rejects(l.semaphore("q:s5", { permits: 2 }).tryAcquire(), QuorumError);
        const one = await l.semaphore("q:s5b", { permits: 1 }).tryAcquire();
        assert.ok(one);
        assert.equal(await (w.locks[CLIENTS] as Surelock).semaphore("q:s5b", { permits: 1 }).tryAcquire(), null);
        await one.release();
        const leader = await l.election("q:e5").campaign({ value: "x", timeout: 5_000 });
        await l.election("q:e5").proclaim("y").catch(() => {});
        await leader.release();
      }, [0, 1]);
      // A proclaim that reached nodes 2, 3, 4 is read by a client cut off from nodes 3 and 4.
      const e = (w.locks[0] as Surelock).election("q:e6");
      await e.campaign({ value: "first" });
      await cutOff(w, 0, () => e.proclaim("second"), [0, 1]);
      const seen = await cutOff(w, 1, (l) => l.election("q:e6").leader(), [3, 4]);
      assert.equal(seen?.value, "second");
      await e.resign();
    } finally {
      await w.close();
    }
  });
});
