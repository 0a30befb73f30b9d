/**
 * Quorum mode, the protocol's identity rule: a re-entry carries its hold's id, counts only where
 * a majority re-entered that hold, never turns into a fresh acquisition on a node that missed the
 * first one, and never rewrites a live hold's token. And tokens keep growing when counters vanish.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { startRespProxy, type RespProxy } from "../harness/resp-proxy.js";
import { eventually } from "../helpers/fixtures.js";
import { startPrimaries, type RedisServer } from "../helpers/redis-topology.js";

describe("quorum mode: re-entry and tokens", () => {
  let nodes: RedisServer[] = [];
  let proxies: RespProxy[] = [];
  const closers: (() => Promise<unknown> | void)[] = [];
  before(async () => { nodes = await startPrimaries(5); });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    for (const p of proxies.splice(0)) await p.close();
    await Promise.all(nodes.map((n) => n.command("FLUSHALL")));
  });
  after(() => Promise.all(nodes.map((n) => n.stop())));

  /** A quorum Surelock whose every node link goes through a fault proxy. */
  async function quorum(options: { ttl?: number; counterRetention?: number } = {}): Promise<Surelock> {
    proxies = await Promise.all(nodes.map((n, i) => startRespProxy(n, `n${i}`)));
    const clients = proxies.map((p) => {
      const c = new Redis({ host: p.host, port: p.port, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 50 });
      c.on("error", () => {});
      return c;
    });
    await Promise.all(clients.map((c) => (c.status === "ready" ? undefined : new Promise((resolve) => c.once("ready", resolve)))));
    const locks = new Surelock({ redis: clients, ttl: options.ttl ?? 10_000, ...(options.counterRetention && { counterRetention: options.counterRetention }) });
    closers.push(() => clients.forEach((c) => c.disconnect()), () => locks.close());
    return locks;
  }

  const holdOn = async (n: RedisServer, key: string): Promise<Record<string, string>> => {
    const flat = (await n.command("HGETALL", `surelock:{${key}}:lock`)) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  };

  it("a re-entry after a minority node missed the first acquire: counted on the majority, never founded on the node that missed it", async () => {
    const locks = await quorum();
    const other = new Surelock({ redis: nodes.map((n) => { const c = new Redis({ port: n.port, host: n.host }); closers.push(() => c.disconnect()); return c; }) });
    closers.push(() => other.close());
    const missing = proxies[4] as RespProxy;
    missing.blackhole();
    await locks.withLock("re", async (outer) => {
      // Node 4 never saw the acquire (its bytes are dropped with the connection).
      missing.heal("reset");
      const before = await Promise.all(nodes.map((n) => holdOn(n, "re")));
      assert.equal(before[4]?.h, undefined, "node 4 missed the first acquire");
      const outerTokens = before.slice(0, 4).map((h) => h.t);
      await locks.withLock("re", async (inner) => {
        assert.equal(inner.fencingToken, outer.fencingToken, "a re-entry keeps the hold's token");
        const during = await Promise.all(nodes.map((n) => holdOn(n, "re")));
        assert.deepEqual(during.slice(0, 4).map((h) => h.n), ["2", "2", "2", "2"]);
        assert.equal(during[4]?.h, undefined, "no fresh hold was founded on node 4");
        assert.deepEqual(during.slice(0, 4).map((h) => h.t), outerTokens, "no live hold's token was rewritten");
      });
      const after = await Promise.all(nodes.map((n) => holdOn(n, "re")));
      assert.deepEqual(after.slice(0, 4).map((h) => h.n), ["1", "1", "1", "1"], "the nested release left the outer entry");
      assert.equal(outer.held, true);
      assert.equal(await other.mutex("re").tryAcquire(), null, "and the outer hold still excludes everyone else");
    });
    // The release settled with a majority; the rest of the nodes apply it as it reaches them.
    await eventually(async () => (await Promise.all(nodes.map((n) => n.command("HEXISTS", "surelock:{re}:lock", "o")))).every((x) => x === 0),
      2_000, "the release on every node");
  });

  it("tokens keep growing when every counter expired and restarted from its node's clock", async () => {
    const locks = await quorum({ ttl: 200, counterRetention: 450 });
    let last = 0n;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3; i++) {
        const lease = await locks.mutex("tokens").acquire();
        assert.ok(lease.fencingToken > last, `round ${round}: ${lease.fencingToken} after ${last}`);
        last = lease.fencingToken;
        await lease.release();
      }
      // Every node's counter expires (the retention is 450 ms): the next token comes from the clocks.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const counters = await Promise.all(nodes.map((n) => n.command("EXISTS", "surelock:{tokens}:lock")));
      assert.deepEqual(counters, [0, 0, 0, 0, 0], "the counters expired");
    }
  });
});
