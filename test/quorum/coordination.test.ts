// Coordination primitives on a quorum whose majority rule composes: three clients, each reaching
// three real redis-servers through proxies of its own, and each, in turn, cut off from a
// different node. Every operation that resolved was acknowledged by a majority, but by a
// different one each time; what they did together must still count on every majority read.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import type { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { startPrimaries, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { assertEveryKeyExpires, fastClient, ready, within } from "./support.js";

const CLIENTS = 3;

interface World {
  readonly nodes: RedisServer[];
  /** proxies[c][n]: client c's link to node n. */
  readonly proxies: TcpProxy[][];
  /** locks[c]: client c's Surelock, over its own links; locks[CLIENTS]: a client with every link up. */
  readonly locks: Surelock[];
  close(): Promise<void>;
}

after(stopAll);

async function world(): Promise<World> {
  const nodes = await startPrimaries(3);
  const proxies: TcpProxy[][] = [];
  const clients: Redis[] = [];
  const locks: Surelock[] = [];
  for (let c = 0; c <= CLIENTS; c++) {
    const mine = await Promise.all(nodes.map((n) => startProxy({ host: n.host, port: n.port })));
    proxies.push(mine);
    const own = mine.map((p) => fastClient(p.port));
    await Promise.all(own.map((cl) => ready(cl)));
    clients.push(...own);
    locks.push(new Surelock({ redis: own, commandTimeout: 300 }));
  }
  return {
    nodes, proxies, locks,
    async close() {
      await Promise.all(locks.map((l) => l.close()));
      for (const cl of clients) cl.disconnect();
      for (const p of proxies.flat()) await p.close();
      for (const n of nodes) await assertEveryKeyExpires([n]);
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** Runs `op` as client `c` while its link to node `c` swallows everything. */
async function cutOff<T>(w: World, c: number, op: (locks: Surelock) => Promise<T>): Promise<T> {
  const link = w.proxies[c]?.[c] as TcpProxy;
  link.blackhole();
  try {
    return await op(w.locks[c] as Surelock);
  } finally {
    link.pass();
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
      const outcomes = await within(10_000, "every client's wait() to settle", opened);
      assert.deepEqual(outcomes.map((o) => o.status), w.locks.map(() => "fulfilled"));
      for (const l of w.locks) assert.equal(await l.latch("q:latch", { count: 3 }).count(), 0);
    } finally {
      await w.close();
    }
  });
});
