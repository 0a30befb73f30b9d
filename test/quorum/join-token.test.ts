// A join by owner enters its owner's hold and reports that hold's token, even when a node outside
// the hold's quorum keeps a copy of the hold under a token of its own (torture seed 42, quorum, 10
// minutes: a joiner got token ...018 while the hold it joined was ...017). Three real
// redis-servers; each Surelock reaches them through TCP proxies of its own.
//
// How such a copy comes about: the holder's acquire ran on node 1, whose counter was one ahead
// (an attempt founded and gave back a hold there alone), but its reply was lost with the
// connection; nodes 0 and 2 agreed on the smaller token, so the lease took it and raised nobody
// (no `l` written anywhere). The give-back of node 1's part is lost here (the client's new
// connection goes unanswered); one that lands after a joiner entered the hold there drops only the
// founding entry, which leaves the same copy. The watchdog renews the copy (it renews by hold id).
// A joiner that heard node 1 among its first answers saw the tokens disagree, waited for every
// node and took the largest.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Redis } from "ioredis";
import { Surelock, type Lease } from "../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startPrimaries, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { eventually, fastClient, lockKey, ready, within } from "./support.js";

after(stopAll);

async function viaProxies(nodes: readonly RedisServer[]): Promise<{ proxies: FaultProxy[]; clients: Redis[] }> {
  const proxies = await Promise.all(nodes.map((n) => startFaultProxy({ host: n.host, port: n.port })));
  const clients = proxies.map((p) => fastClient(p.port));
  await Promise.all(clients.map((c) => ready(c)));
  return { proxies, clients };
}

describe("quorum mode: a join by owner takes the token of the hold it joins", () => {
  it("not a larger one from a node that keeps an uncounted copy of the hold", async () => {
    const nodes = await startPrimaries(3);
    const holder = await viaProxies(nodes);
    const joiner = await viaProxies(nodes);
    const direct = nodes.map((n) => fastClient(n.port));
    await Promise.all(direct.map((c) => ready(c)));
    const node1 = direct[1] as Redis;
    // A per-node timeout well above the delays below: no vote may time out on a loaded machine.
    const a = new Surelock({ redis: holder.clients, ttl: 10_000, commandTimeout: 2_000 });
    const b = new Surelock({ redis: joiner.clients, ttl: 10_000, commandTimeout: 2_000 });
    const alone = new Surelock({ redis: node1, ttl: 10_000 });
    const key = "join-token";
    const owner = "owner-of-join-token";
    const leases: Lease[] = [];
    try {
      // The counters agree (the first acquisition raised them to its token)...
      const first = await within(5_000, a.mutex(key).acquire(), "the first acquisition");
      await within(5_000, first.release(), "its release");
      // ...until a hold is founded and given back on node 1 alone: its counter is one ahead.
      const lone = await within(5_000, alone.mutex(key).acquire(), "a hold on node 1 alone");
      await within(5_000, lone.release(), "its release");

      // The holder's acquire runs on node 1 but its reply is lost with the connection, and so is
      // the give-back of its part there: the client's new connection to node 1 goes unanswered.
      const toNode1 = holder.proxies[1] as FaultProxy;
      const lost = toNode1.cutReply({ text: owner });
      toNode1.silenceNew(true);
      const held = await within(5_000, a.mutex(key).acquire({ owner, timeout: 5_000 }), "the holder's acquire");
      leases.push(held);
      await within(5_000, lost, "the reply of node 1 to be lost");
      // Node 1 keeps the hold, founded there with its own token, one above the lease's.
      await eventually(2_000, "node 1 to hold the owner's hold", async () => (await node1.hget(lockKey(key), "o")) === owner);
      assert.equal(BigInt((await node1.hget(lockKey(key), "c")) ?? "0"), held.fencingToken + 1n, "node 1's own token");

      // The joiner hears nodes 1 and 2 first (their tokens disagree), node 0 last: its link is
      // paused until the join entered the hold on the other two.
      const toNode0 = joiner.proxies[0] as FaultProxy;
      toNode0.blackhole();
      const joining = b.mutex(key).acquire({ owner, timeout: 8_000 });
      joining.catch(() => {}); // awaited below; a failure before that must not go unhandled
      await eventually(5_000, "the join to enter the hold on nodes 1 and 2", async () =>
        (await Promise.all([1, 2].map((i) => (direct[i] as Redis).hget(lockKey(key), "n")))).every((n) => n === "2"));
      toNode0.heal("deliver");
      const joined = await within(8_000, joining, "the join by owner");
      leases.push(joined);
      assert.equal(joined.fencingToken, held.fencingToken, "the joiner reports the token of the hold it joined");
      // Node 1 now records the hold's token beside its own: a later joiner reads it there too.
      assert.equal(await node1.hget(lockKey(key), "l"), String(held.fencingToken));
    } finally {
      await Promise.allSettled(leases.map((l) => l.release()));
      await Promise.allSettled([a.close(), b.close(), alone.close()]);
      for (const c of [...holder.clients, ...joiner.clients, ...direct]) c.disconnect();
      await Promise.all([...holder.proxies, ...joiner.proxies].map((p) => p.close()));
    }
  });
});
