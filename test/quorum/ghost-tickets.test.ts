// Quorum mode's waiting line leaves no ghost: contenders whose every node link has its own random
// delay (so votes arrive in every order, "busy" ones before and after the deciding majority) take
// one key in turn on 3 and on 5 real redis-servers; after each acquire, no node keeps a ticket of
// the winner in its line. A ghost ticket stands at its early place in the ordered line, ahead of
// everyone, for a whole ticket lease: with one node down, a lock free on every reachable node
// could not be taken.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import type { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startPrimaries, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { fastClient, ready } from "./support.js";

const CONTENDERS = 3;
const ROUNDS = 25;
/** Longest delay of one link, each way (ms). */
const MAX_DELAY_MS = 4;
/** A late vote's give-back is one round trip behind it; a ghost would stand for a whole ticket lease (3 s here). */
const SETTLE_MS = 300;

/** A seeded generator (mulberry32), so a failure names a seed to replay. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

after(stopAll);

/** The line of mutex `key` on `node`: each ticket's owner (the registration's last field). */
async function lineOwners(node: RedisServer, key: string): Promise<string[]> {
  const reply = await node.command("HGETALL", `surelock:{${key}}:tickets`);
  assert.ok(Array.isArray(reply));
  const owners: string[] = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const field = String(reply[i]);
    if (field.startsWith("<")) continue; // a ticket's place in the ordered line
    owners.push(String(reply[i + 1]).split("|").slice(4).join("|"));
  }
  return owners;
}

async function ghostsOf(nodes: readonly RedisServer[], key: string, owner: string): Promise<number[]> {
  return Promise.all(nodes.map(async (n) => (await lineOwners(n, key)).filter((o) => o === owner).length));
}

async function run(count: number, seed: number): Promise<void> {
  const random = prng(seed);
  const nodes = await startPrimaries(count);
  const proxies: FaultProxy[][] = [];
  const clients: Redis[] = [];
  const locks: Surelock[] = [];
  try {
    for (let c = 0; c < CONTENDERS; c++) {
      const mine = await Promise.all(nodes.map((n) => startFaultProxy({ host: n.host, port: n.port })));
      proxies.push(mine);
      const own = mine.map((p) => fastClient(p.port));
      await Promise.all(own.map((cl) => ready(cl)));
      clients.push(...own);
      locks.push(new Surelock({ redis: own, ttl: 10_000, commandTimeout: 2_000 }));
    }
    const key = `ghost:${count}:${seed}`;
    let acquires = 0;
    let inside = 0;
    const contender = async (c: number): Promise<void> => {
      for (let r = 0; r < ROUNDS; r++) {
        // Every link of this contender gets a new delay each way: votes race in a new order.
        for (const p of proxies[c] ?? []) {
          p.setLatency(Math.floor(random() * (MAX_DELAY_MS + 1)), Math.floor(random() * (MAX_DELAY_MS + 1)));
        }
        const lease = await (locks[c] as Surelock).mutex(key).acquire({ timeout: 30_000 });
        inside++;
        assert.equal(inside, 1, "two holders at once");
        acquires++;
        // Held until every node's line is clear of this winner (a late vote's give-back may still be on its way).
        const deadline = performance.now() + SETTLE_MS;
        let ghosts = await ghostsOf(nodes, key, lease.owner);
        while (ghosts.some((g) => g > 0) && performance.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          ghosts = await ghostsOf(nodes, key, lease.owner);
        }
        assert.deepEqual(ghosts, nodes.map(() => 0), `seed ${seed}, acquire #${acquires}: the winner's ticket still stands in line (tickets per node: ${ghosts.join(", ")})`);
        inside--;
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: CONTENDERS }, (_, c) => contender(c)));
    assert.equal(acquires, CONTENDERS * ROUNDS);
    // Once nobody waits, no line is left anywhere.
    for (const n of nodes) assert.deepEqual(await lineOwners(n, key), [], `a line is left on port ${n.port}`);
  } finally {
    await Promise.all(locks.map((l) => l.close()));
    for (const cl of clients) cl.disconnect();
    for (const p of proxies.flat()) await p.close();
    await Promise.all(nodes.map((n) => n.stop()));
  }
}

void describe("quorum mode: no ghost ticket after any acquire", () => {
  for (const count of [3, 5]) {
    void it(`${count} nodes, ${CONTENDERS} contenders, random link delays`, async () => {
      for (const seed of [1, 2]) await run(count, seed * 100 + count);
    });
  }
});
