/** Leader election in quorum mode: 3 independent primaries, one of them stopped midway. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { assertEveryKeyExpires, startsWaiting, within } from "../helpers/fixtures.js";
import { startPrimaries, type RedisServer } from "../helpers/redis-topology.js";
import { fastClient, ready } from "../quorum/support.js";
import { Observed } from "./support.js";

describe("leader election in quorum mode", () => {
  let nodes: RedisServer[];
  const clients: Redis[] = [];
  before(async () => { nodes = await startPrimaries(3); });
  after(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(nodes.map((n) => n.stop()));
  });
  const instance = async (): Promise<Surelock> => {
    const own = nodes.map((n) => fastClient(n.port));
    clients.push(...own);
    await Promise.all(own.map((c) => ready(c)));
    return new Surelock({ redis: own, ttl: 2_000 });
  };

  it("one leader on a majority; its value, the handover and the observers survive a stopped node", async () => {
    const [a, b, w] = [await instance(), await instance(), await instance()];
    const seen = new Observed(w.election("q"));
    await seen.next((l) => l === null);
    const ea = a.election("q");
    const la = await ea.campaign({ value: "a" });
    assert.deepEqual(await w.election("q").leader().then((l) => [l?.owner, l?.value, l?.fencingToken]), [la.owner, "a", la.fencingToken]);
    await seen.next((l) => l?.value === "a");
    const eb = b.election("q");
    const waiting = startsWaiting("q");
    const pb = eb.campaign({ value: "b" });
    await waiting;
    await nodes[0]!.pause();
    try {
      await ea.proclaim("a2");
      assert.equal((await w.election("q").leader())?.value, "a2");
      await seen.next((l) => l?.value === "a2");
      await ea.resign();
      const lb = await within(5_000, pb, "b's campaign");
      assert.ok(lb.fencingToken > la.fencingToken);
      await seen.next((l) => l?.fencingToken === lb.fencingToken);
      await eb.resign();
      await seen.next((l) => l === null, 3);
    } finally {
      await nodes[0]!.resume();
    }
    await seen.stop();
    await Promise.all([a.close(), b.close(), w.close()]);
    for (const n of nodes) await assertEveryKeyExpires(n);
  });
});
