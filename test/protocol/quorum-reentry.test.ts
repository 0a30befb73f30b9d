/**
 * Quorum mode, the protocol's identity rule: a re-entry carries its hold's id, counts only where
 * a majority re-entered that hold, never turns into a fresh acquisition on a node that missed the
 * first one, and never rewrites a live hold's token. And tokens keep growing when counters vanish.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { eventually } from "../helpers/fixtures.js";
import { startPrimaries, type RedisServer } from "../helpers/redis-topology.js";

describe("quorum mode: rounds, re-entry and tokens", () => {
  let nodes: RedisServer[] = [];
  let proxies: FaultProxy[] = [];
  /** The connections of the latest quorum(), node by node. */
  let links: Redis[] = [];
  const closers: (() => Promise<unknown> | void)[] = [];
  before(async () => { nodes = await startPrimaries(5); });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    for (const p of proxies.splice(0)) await p.close();
    await Promise.all(nodes.map((n) => n.command("FLUSHALL")));
  });
  after(() => Promise.all(nodes.map((n) => n.stop())));

  /** A quorum Surelock whose every node link goes through a fault proxy. */
  async function quorum(options: { ttl?: number; counterRetention?: number; commandTimeout?: number } = {}): Promise<Surelock> {
    proxies = await Promise.all(nodes.map((n, i) => startFaultProxy(n, { name: `n${i}`, framing: "resp" })));
    const clients = proxies.map((p) => {
      const c = new Redis({ host: p.host, port: p.port, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 50 });
      c.on("error", () => {});
      return c;
    });
    await Promise.all(clients.map((c) => (c.status === "ready" ? undefined : new Promise((resolve) => c.once("ready", resolve)))));
    links = clients;
    const locks = new Surelock({
      redis: clients, ttl: options.ttl ?? 10_000,
      ...(options.counterRetention && { counterRetention: options.counterRetention }),
      ...(options.commandTimeout && { commandTimeout: options.commandTimeout }),
    });
    closers.push(() => clients.forEach((c) => c.disconnect()), () => locks.close());
    return locks;
  }

  const holdOn = async (n: RedisServer, key: string): Promise<Record<string, string>> => {
    const flat = (await n.command("HGETALL", `surelock:{${key}}:lock`)) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  };

  /** Script calls a node ran to the end (EVAL and EVALSHA, less those that failed, e.g. NOSCRIPT). */
  const scriptsRun = async (n: RedisServer): Promise<number> => {
    const stats = await n.info("commandstats");
    let done = 0;
    for (const command of ["eval", "evalsha"]) {
      const entry = stats[`cmdstat_${command}`] ?? "";
      const field = (name: string): number => Number(entry.match(new RegExp(`${name}=(\\d+)`))?.[1] ?? 0);
      done += field("calls") - field("failed_calls") - field("rejected_calls");
    }
    return done;
  };

  it("a round that lost gives back every vote, the late ones too, before the same hold is tried again", async () => {
    // A slow node's vote for a lost round arrives after the decision. Its give-back must reach the
    // node before the next round's acquire of the same hold id, or it deletes the hold that round
    // counts there: the lease would believe in a node that no longer holds it.
    const locks = await quorum({ commandTimeout: 5_000 });
    const key = "rounds";
    const others = await Promise.all([0, 1, 2].map(async (i) => {
      const c = new Redis({ port: (nodes[i] as RedisServer).port, host: (nodes[i] as RedisServer).host });
      const single = new Surelock({ redis: c, ttl: 10_000 });
      closers.push(() => c.disconnect(), () => single.close());
      return single.mutex(key).acquire();
    }));
    const slow = proxies[4] as FaultProxy;
    await Promise.all([3, 4].map((i) => (nodes[i] as RedisServer).command("CONFIG", "RESETSTAT")));
    slow.blackhole();
    const acquiring = locks.mutex(key).acquire({ timeout: 30_000 });
    // Round one: nodes 0-2 are held by others (busy), node 3 said yes and is given back; node 4's
    // vote is on the wire.
    await eventually(async () => (await scriptsRun(nodes[3] as RedisServer)) >= 2 && (await holdOn(nodes[3] as RedisServer, key)).h === undefined,
      5_000, "node 3's yes given back");
    await Promise.all(others.map((lease) => lease.release()));
    slow.heal("deliver");
    const lease = await acquiring;
    // Everything A sent node 4 has run: the replies of the delivered calls came before the first
    // PING's, so whatever follow-up they caused was written before the second PING.
    const link = links[4] as Redis;
    await link.ping();
    await new Promise((resolve) => setImmediate(resolve));
    await link.ping();
    const holds = await Promise.all(nodes.map((n) => holdOn(n, key)));
    assert.ok(lease.held);
    assert.deepEqual(holds.map((h) => h.h), holds.map(() => holds[0]?.h), "every node holds the lease's hold, node 4 included");
    assert.notEqual(holds[0]?.h, undefined);
    await lease.release();
  });

  it("a re-entry after a minority node missed the first acquire: counted on the majority, never founded on the node that missed it", async () => {
    const locks = await quorum();
    const other = new Surelock({ redis: nodes.map((n) => { const c = new Redis({ port: n.port, host: n.host }); closers.push(() => c.disconnect()); return c; }) });
    closers.push(() => other.close());
    const missing = proxies[4] as FaultProxy;
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

  it("a process joining a hold by owner gets the lease's token, whichever majority answers it first", async () => {
    // Counters that disagree: nodes 3 and 4 are far ahead of the others.
    await Promise.all(nodes.map((n, i) => n.command("HSET", "surelock:{shared}:lock", "c", i < 3 ? "100" : "500")));
    const a = await quorum();
    const b = (() => {
      const clients = proxies.map((p) => {
        const c = new Redis({ host: p.host, port: p.port, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 50 });
        c.on("error", () => {});
        return c;
      });
      const locks = new Surelock({ redis: clients, ttl: 10_000 });
      closers.push(() => clients.forEach((c) => c.disconnect()), () => locks.close());
      return locks;
    })();
    // A's fastest majority is nodes 0-2, which agree on 101: the lease is settled with that token.
    for (const i of [3, 4]) proxies[i]?.setLatency(30, 30);
    const first = await a.mutex("shared").acquire({ owner: "job" });
    assert.equal(first.fencingToken, 101n);
    // The late votes of nodes 3 and 4 (token 501) arrive: the lease's token is 101 all the same.
    await eventually(async () => {
      const counters = await Promise.all([3, 4].map(async (i) => (await holdOn(nodes[i] as RedisServer, "shared")).c));
      return counters.every((c) => c === "501");
    }, 3_000, "nodes 3 and 4 ran A's acquire");
    await eventually(async () => {
      // A hold's token is its `t`, or the counter when it has none.
      const late = await Promise.all([3, 4].map(async (i) => holdOn(nodes[i] as RedisServer, "shared")));
      return late.every((hold) => hold.h === undefined || (hold.t ?? hold.c) !== "501");
    }, 3_000, "the late, larger tokens given back");
    // B's fastest answers now come from nodes 2-4: none may show it a token other than the lease's.
    for (const i of [3, 4]) proxies[i]?.setLatency(0, 0);
    for (const i of [0, 1]) proxies[i]?.setLatency(30, 30);
    const joined = await b.mutex("shared").acquire({ owner: "job" });
    assert.equal(joined.fencingToken, first.fencingToken, "one hold, one fencing token, in every process that shares it");
    await joined.release();
    await first.release();
  });

  it("a process joining by owner reads the chosen token from nodes whose own token was smaller", async () => {
    // Counters 100, 100, 300, 500, 500: the tokens the nodes issue disagree and no majority (3 of
    // 5) issues one, so the founding takes the largest and raises the others (a token a majority
    // issued would be taken as it is: one of those nodes was in the previous lease's majority).
    await Promise.all(nodes.map((n, i) => n.command("HSET", "surelock:{raised}:lock", "c", i < 2 ? "100" : i === 2 ? "300" : "500")));
    const a = await quorum();
    const clients = proxies.map((p) => {
      const c = new Redis({ host: p.host, port: p.port, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 50 });
      c.on("error", () => {});
      return c;
    });
    const b = new Surelock({ redis: clients, ttl: 10_000 });
    closers.push(() => clients.forEach((c) => c.disconnect()), () => b.close());
    // A hears nodes 2-4 first: 301, 501, 501 disagree, so it waits for all, takes 501 and raises
    // nodes 0-2, whose holds keep their own tokens 101, 101, 301.
    for (const i of [0, 1]) proxies[i]?.setLatency(30, 30);
    const first = await a.mutex("raised").acquire({ owner: "job" });
    assert.equal(first.fencingToken, 501n);
    const onLow = await Promise.all([0, 1, 2].map((i) => holdOn(nodes[i] as RedisServer, "raised")));
    assert.deepEqual(onLow.map((h) => [h.t, h.l]), [["101", "501"], ["101", "501"], ["301", "501"]], "own tokens kept, the chosen one beside them");
    // B hears nodes 0-2 first, whose own tokens are 101, 101 and 301: it must still read 501.
    for (const i of [0, 1]) proxies[i]?.setLatency(0, 0);
    for (const i of [3, 4]) proxies[i]?.setLatency(30, 30);
    const joined = await b.mutex("raised").acquire({ owner: "job" });
    assert.equal(joined.fencingToken, 501n, "the lease's token, not the nodes' own");
    await joined.release();
    await first.release();
  });
});
