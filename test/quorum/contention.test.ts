// Quorum mode under contention: ten waiters on one key over 3 and 5 real redis-servers. What a
// contended section costs each node is counted in script calls (INFO commandstats counts every
// EVALSHA/EVAL, the watchdog's too), a figure a loaded machine does not move: a waiting line that
// the nodes agree on serves each waiter in one attempt and a release, where attempts that split
// between nodes and are made again cost hundreds.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventually, fiveNodes, heldOn, noticedDown, ready, within } from "./support.js";
import type { Redis } from "ioredis";
import type { RedisServer } from "../helpers/redis-topology.js";

const five = fiveNodes();
const { nodes, clients, quorum } = five;

const WORKERS = 10;
const SECTIONS = 60;
/**
 * Script calls per contended section on one node, at most: the winner's attempt and its release,
 * the waiters' attempts when told their turn, the watchdog's ticket refreshes. The line-splitting
 * collapse cost about 180.
 */
const MAX_CALLS_PER_SECTION = 12;

async function scriptCalls(on: readonly RedisServer[]): Promise<number[]> {
  return Promise.all(on.map(async (n) => {
    const stats = await n.info("commandstats");
    const calls = (name: string): number => Number(/calls=(\d+)/.exec(stats[`cmdstat_${name}`] ?? "")?.[1] ?? 0);
    return calls("evalsha") + calls("eval");
  }));
}

/** Ten workers take `key` in turn until `SECTIONS` sections ran; checks exclusion on the way. */
async function contend(count: number, key: string): Promise<{ perSection: number[]; holderChanges: number }> {
  const locks = quorum(10_000, { redis: clients.slice(0, count), commandTimeout: 2_000 });
  const on = nodes.slice(0, count);
  // One warm-up cycle: the scripts load, the subscriptions are not counted in the window.
  await (await locks.mutex(key).acquire()).release();
  const before = await scriptCalls(on);
  let sections = 0;
  let inside = 0;
  let holderChanges = 0;
  let last = -1;
  const worker = async (w: number): Promise<void> => {
    while (sections < SECTIONS) {
      const lease = await locks.mutex(key).acquire({ timeout: 20_000 });
      inside++;
      assert.equal(inside, 1, "two holders at once");
      if (last !== w) holderChanges++;
      last = w;
      sections++;
      await new Promise((r) => setImmediate(r));
      inside--;
      await lease.release();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  const after = await scriptCalls(on);
  return { perSection: after.map((a, i) => (a - (before[i] ?? 0)) / sections), holderChanges };
}

void describe("quorum mode: script calls per contended section", () => {
  for (const count of [3, 5]) {
    void it(`${count} nodes, ${WORKERS} workers on one key: each node runs at most ${MAX_CALLS_PER_SECTION} script calls per section`, async (t) => {
      const { perSection, holderChanges } = await contend(count, `contention:${count}`);
      t.diagnostic(`script calls per section on each node: ${perSection.map((c) => c.toFixed(1)).join(", ")}; holder changes ${holderChanges}`);
      assert.ok(holderChanges > SECTIONS / 2, `the lock changed hands ${holderChanges} times in ${SECTIONS} sections`);
      for (const [i, calls] of perSection.entries()) {
        assert.ok(calls <= MAX_CALLS_PER_SECTION, `node ${i} ran ${calls.toFixed(1)} script calls per section (${perSection.map((c) => c.toFixed(1)).join(", ")})`);
      }
    });
  }
});

void describe("quorum mode: a node that comes back joins the line", () => {
  void it("3 nodes: one restarts empty while a waiter stands in line; the waiter is served, and the next waiter stands on all three", async () => {
    const key = "contention:rejoin";
    const on = nodes.slice(0, 3);
    const locks = quorum(10_000, { redis: clients.slice(0, 3), commandTimeout: 1_000 });
    const first = await locks.mutex(key).acquire();
    const second = locks.mutex(key).acquire({ timeout: 10_000 });
    await eventually(5_000, "the second waiter's ticket on every node", async () =>
      (await Promise.all(on.map((n) => n.command("LLEN", `surelock:{${key}}:queue`)))).every((l) => l === 1));
    // Node 2 dies and comes back empty: no lock, no line.
    await on[2]?.kill();
    await noticedDown(clients[2] as Redis);
    await on[2]?.restart();
    await ready(clients[2] as Redis);
    await first.release();
    const lease = await within(5_000, second, "the waiter to be served");
    // Held by the majority that kept its line (node 2's counter restarted at its clock: a larger
    // token that came late is given back there, as for any late vote above the lease's token).
    assert.deepEqual((await heldOn(on, key)).slice(0, 2), [1, 1]);
    const third = locks.mutex(key).acquire({ timeout: 10_000 });
    await eventually(5_000, "the next waiter's ticket on every node, the restarted one too", async () =>
      (await Promise.all(on.map((n) => n.command("LLEN", `surelock:{${key}}:queue`)))).every((l) => l === 1));
    await lease.release();
    await (await within(5_000, third, "the next waiter to be served")).release();
    assert.deepEqual(await heldOn(on, key), [0, 0, 0]);
  });
});
