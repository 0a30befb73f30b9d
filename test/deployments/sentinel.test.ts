/**
 * Sentinel: primary + 2 replicas + 3 sentinels, real processes. The primary is SIGKILLed while
 * leases are held and workers contend, right after its replication stalled (the replicas are
 * SIGSTOPped and cut off): exactly the moment in which a primary acknowledges a lock that no
 * replica has. With `replicas: { count: 1 }` no two holders ever overlap; without it the figures
 * are logged, and one lease taken in that moment is shown to be handed to a second holder.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { createSentinel } from "redis";
import { ConnectionError, LockLostError, Surelock, type Lease } from "../../src/index.js";
import { LUA } from "../../src/scripts/lua.generated.js";
import { startSentinelSet, stopAll, type RedisServer, type SentinelSet } from "../helpers/redis-topology.js";
import { commandCalls, eventually, within } from "../helpers/fixtures.js";
import { contend, keysWithoutTtl, nextEvent, Referee, Tally, watchFailovers } from "./support.js";
import type { ErrorMessage, ExtendMessage } from "../../src/index.js";

after(stopAll);

/** An ioredis client that finds the primary through the sentinels and retries quickly. */
function sentinelClient(set: SentinelSet): Redis {
  const redis = new Redis({
    sentinels: set.sentinelAddresses(),
    name: set.masterName,
    sentinelRetryStrategy: () => 100,
    retryStrategy: () => 100,
    connectTimeout: 1_000,
  });
  redis.on("error", () => {});
  return redis;
}

function serverAt(set: SentinelSet, port: number): RedisServer {
  const server = [set.primary, ...set.replicas].find((s) => s.port === port);
  assert.ok(server, `no server on port ${port}`);
  return server;
}

interface Figures {
  overlaps: number;
  tokenRegressions: number;
  sections: number;
  recoverMs: number;
  switchMs: number;
  replicaBackMs: number;
  counter: number;
  written: number;
  unknown: number;
  refused: number;
  errors: Record<string, number>;
}

/**
 * The failover run: 3 Surelock instances (each its own client) x 2 keys of contending workers.
 * Replication stalls, a witness lease is taken meanwhile, the primary is SIGKILLed, the replicas
 * resume, Sentinel promotes one; the run goes on until 6 more sections got through.
 */
async function failoverUnderContention(replicas: { count: number; timeout: number } | undefined): Promise<{
  figures: Figures;
  survivor: { lease: Lease; extendedAfterFailover: boolean; released: boolean };
  witness: { acquired: Lease | undefined; error: unknown; tookOverWhileHeld: boolean | undefined; lostReason: string | undefined };
}> {
  const set = await startSentinelSet({ replicas: 2, sentinels: 3 });
  const failovers = await watchFailovers(set.sentinels[0]!);
  const clients = [0, 1, 2].map(() => sentinelClient(set));
  const options = { ttl: 4_000, commandTimeout: 1_000, pollInterval: 200, ...(replicas && { replicas }) };
  const instances = clients.map((redis) => new Surelock({ redis, ...options }));
  // The witness has an instance of its own, so no other lease's renewal carries it along early.
  const extraClients = [sentinelClient(set), sentinelClient(set)];
  const witnessLocks = new Surelock({ redis: extraClients[0]!, ...options });
  const other = new Surelock({ redis: extraClients[1]!, ...options });
  const keys = ["jobs:a", "jobs:b"];
  const referee = new Referee();
  const tally = new Tally();
  const stop = new AbortController();
  try {
    const workers = instances.flatMap((locks) => keys.map((key) => contend({
      locks, key, referee, tally,
      guard: locks.guard(key),
      counter: `data:{${key}}:count`,
      stop: stop.signal,
      jobMs: () => 300 + Math.random() * 2_200,
      acquireTimeoutMs: 3_000,
    })));
    await referee.entries(6, 20_000, "warm-up");

    // A long lease from before the stall: replicated (acknowledged, with `replicas`), it should
    // outlive the failover and be renewed on the new primary.
    const survivor = await instances[0]!.mutex("survivor", { ttl: 20_000 }).acquire({ timeout: 2_000 });

    // Replication stalls: the replicas stop and the primary drops them; it keeps accepting writes.
    await Promise.all(set.replicas.map((r) => r.pause()));
    await set.primary.command("CLIENT", "KILL", "TYPE", "replica");
    let witnessLease: Lease | undefined;
    let witnessError: unknown;
    try {
      witnessLease = await witnessLocks.mutex("witness", { ttl: 30_000 }).acquire({ timeout: 2_000 });
    } catch (error) {
      witnessError = error;
    }
    const witnessLeftOnPrimary = await set.primary.command("HEXISTS", "surelock:{witness}:lock", "o");
    await tally.attemptsDone(4, 20_000);

    const killedAt = performance.now();
    const switched = failovers.next(30_000);
    await set.primary.kill();
    const recovered = referee.entries(1, 40_000, "first section after the failover").then(() => performance.now() - killedAt);
    recovered.catch(() => {});
    await Promise.all(set.replicas.map((r) => r.resume()));
    const promoted = await switched;
    const switchMs = performance.now() - killedAt;
    // For the figures: when the remaining replica replicates from the new primary again (until
    // then, with `replicas`, no write can be acknowledged).
    const reattached = eventually(async () => /state=online/.test((await serverAt(set, promoted.port).info("replication")).slave0 ?? ""),
      60_000, "a replica of the new primary").then(() => Math.round(performance.now() - killedAt), () => -1);

    // The witness: without `replicas` it exists only on the dead primary.
    let tookOverWhileHeld: boolean | undefined;
    let lostReason: string | undefined;
    if (witnessLease) {
      const heldLocally = witnessLease.held;
      const second = await within(10_000, retryUntilAnswered(() => other.mutex("witness").tryAcquire()), "second witness acquire");
      tookOverWhileHeld = second !== null && heldLocally && witnessLease.held;
      const reason = (await within(10_000, abortReason(witnessLease.signal), "witness abort")) as LockLostError;
      lostReason = reason instanceof LockLostError ? reason.reason : String(reason);
      await second?.release();
    } else {
      assert.equal(witnessLeftOnPrimary, 0, "an unacknowledged acquire must be given back");
    }

    const extended = nextEvent<ExtendMessage>("surelock:extend", (m) => m.key === "survivor" && m.automatic, 20_000)
      .then(() => true, () => false);
    const sectionsBefore = referee.entered;
    const recoverMs = await recovered;
    await referee.entries(5, 30_000, "sections after the failover");
    const extendedAfterFailover = await extended;
    const replicaBackMs = await reattached;
    const released = await survivor.release().then(() => true, () => false);

    stop.abort();
    await within(15_000, Promise.all(workers), "workers to stop");
    const primary = serverAt(set, promoted.port);
    let counter = 0;
    for (const key of keys) counter += Number(await primary.command("GET", `data:{${key}}:count`));
    assert.ok(referee.entered > sectionsBefore);
    await Promise.all([...instances, witnessLocks, other].map((l) => l.close()));
    assert.deepEqual(await keysWithoutTtl(primary), [], "every surelock key keeps a TTL");
    return {
      figures: {
        overlaps: referee.overlaps, tokenRegressions: referee.tokenRegressions, sections: referee.entered,
        recoverMs: Math.round(recoverMs), switchMs: Math.round(switchMs), replicaBackMs, counter,
        written: tally.written, unknown: tally.unknown, refused: tally.refused, errors: Object.fromEntries(tally.errors),
      },
      survivor: { lease: survivor, extendedAfterFailover, released },
      witness: { acquired: witnessLease, error: witnessError, tookOverWhileHeld, lostReason },
    };
  } finally {
    stop.abort();
    await Promise.all([...instances, witnessLocks, other].map((l) => l.close()));
    for (const c of [...clients, ...extraClients]) c.disconnect();
    failovers.close();
    await set.stop();
  }
}

/** During a failover a call may fail with ConnectionError: ask again until Redis answers. */
async function retryUntilAnswered<T>(call: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof ConnectionError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function abortReason(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }));
}

void describe("Sentinel: SIGKILL of the primary while replication stalls and workers contend", () => {
  void it("with replicas: { count: 1 } no two holders overlap, tokens only grow, held leases survive and acquires in the stall fail", async () => {
    const { figures, survivor, witness } = await failoverUnderContention({ count: 1, timeout: 300 });
    console.log("# sentinel failover with replicas {count: 1}:", JSON.stringify(figures));
    assert.equal(figures.overlaps, 0, "no two holders inside one section");
    assert.equal(figures.tokenRegressions, 0, "fencing tokens strictly increase");
    // Acknowledged increments survive; unknown ones may or may not have landed.
    assert.ok(figures.counter >= figures.written && figures.counter <= figures.written + figures.unknown,
      `fenced counter ${figures.counter} within [${figures.written}, ${figures.written + figures.unknown}]`);
    assert.ok(witness.error instanceof ConnectionError, "an acquire no replica acknowledged fails");
    assert.equal((witness.error as ConnectionError).code, "ERR_SURELOCK_CONNECTION");
    assert.match((witness.error as Error).message, /0 of 1 required replicas acknowledged/);
    assert.ok(survivor.extendedAfterFailover, "the watchdog renews the surviving lease on the new primary");
    assert.ok(survivor.released, "the surviving lease is released normally");
  });

  void it("without replicas: a lock taken while replication stalled is handed to a second holder (figures logged)", async () => {
    const { figures, survivor, witness } = await failoverUnderContention(undefined);
    console.log("# sentinel failover without replicas:", JSON.stringify({
      ...figures, witnessTakenOverWhileHeld: witness.tookOverWhileHeld, witnessLost: witness.lostReason,
      survivorRenewed: survivor.extendedAfterFailover,
    }));
    // Deterministic: the primary acknowledged the witness lock, no replica had it, and the new
    // primary hands it to someone else while the first holder still believes it holds it; the
    // first holder learns it only from its next renewal.
    assert.ok(witness.acquired, "without WAIT the acquire succeeds on the stalled primary");
    assert.equal(witness.tookOverWhileHeld, true, "a second holder got the lock while the first still held it");
    // Its next renewal finds the second holder's lock.
    assert.equal(witness.lostReason, "taken");
  });
});

void describe("Sentinel: planned failover (SENTINEL FAILOVER)", () => {
  let set: SentinelSet;
  before(async () => {
    set = await startSentinelSet({ replicas: 2, sentinels: 3 });
  });
  after(() => set?.stop());

  void it("Sentinel clients (ioredis with failoverDetector, node-redis createSentinel) renew on the new primary after NOSCRIPT; a client pinned to the demoted primary gets ConnectionError (READONLY) and keeps its lease while valid", async () => {
    const failovers = await watchFailovers(set.sentinels[0]!);
    // Without failoverDetector ioredis stays on the old primary until Sentinel demotes it (about
    // 10 s later), renewing a lock the new primary lets expire: see docs/deployments/sentinel.md.
    const viaSentinel = new Redis({
      sentinels: set.sentinelAddresses(), name: set.masterName, failoverDetector: true,
      sentinelRetryStrategy: () => 100, retryStrategy: () => 100, connectTimeout: 1_000,
    });
    viaSentinel.on("error", () => {});
    const pinned = new Redis({ host: set.primary.host, port: set.primary.port, retryStrategy: () => 100, maxRetriesPerRequest: 1 });
    pinned.on("error", () => {});
    const nodeRedis = createSentinel({ name: set.masterName, sentinelRootNodes: set.sentinelAddresses() });
    nodeRedis.on("error", () => {});
    await nodeRedis.connect();
    const a = new Surelock({ redis: viaSentinel, ttl: 6_000, commandTimeout: 1_000 });
    const b = new Surelock({ redis: pinned, ttl: 9_000, commandTimeout: 1_000 });
    const c = new Surelock({ redis: nodeRedis, ttl: 10_000, commandTimeout: 1_000, pollInterval: 5_000, replicas: { count: 1, timeout: 500 } });
    try {
      const leaseA = await a.mutex("planned:a").acquire();
      const leaseB = await b.mutex("planned:b").acquire();
      const leaseC = await c.mutex("planned:c").acquire();
      // node-redis' Sentinel client: a waiter is woken by the release, not by its 5 s poll.
      const waiting = nextEvent("surelock:wait", (m: { key: string; phase: string }) => m.key === "planned:c" && m.phase === "start", 2_000);
      const waiter = c.mutex("planned:c").acquire({ timeout: 8_000 });
      await waiting;
      await leaseC.release();
      const leaseC2 = await within(2_500, waiter, "wake-up through node-redis Sentinel (poll 5 s)");
      for (const replica of set.replicas) {
        assert.equal(((await replica.command("SCRIPT", "EXISTS", LUA.keepalive.sha)) as number[])[0], 0,
          "replicas do not have the scripts cached before the failover");
      }

      const switched = failovers.next(30_000);
      await set.sentinels[0]!.command("SENTINEL", "FAILOVER", set.masterName);
      const promoted = serverAt(set, (await switched).port);

      // Renewed on the new primary (a fresh TTL there), after its EVALSHA met NOSCRIPT and EVAL
      // loaded the script.
      const pttl = (key: string) => async () => Number(await promoted.command("PTTL", `surelock:{${key}}:lock`));
      await eventually(async () => (await pttl("planned:a")()) > 5_000, 10_000, "planned:a renewed on the new primary");
      await eventually(async () => (await pttl("planned:c")()) > 9_000, 10_000, "planned:c renewed on the new primary");
      assert.ok(leaseA.held && leaseC2.held);
      assert.equal(((await promoted.command("SCRIPT", "EXISTS", LUA.keepalive.sha)) as number[])[0], 1);
      assert.ok((await commandCalls(promoted, "eval")) >= 1, "EVAL fallback ran on the new primary");

      // Demote the old primary now (Sentinel would, some seconds later). The pinned client stays
      // connected to it; once it has the new primary's data, renewing planned:b there is a write.
      const newPrimary = await set.currentPrimary();
      await set.primary.command("REPLICAOF", newPrimary.host, newPrimary.port);
      await eventually(async () => (await set.primary.info("replication")).master_link_status === "up", 15_000, "old primary syncs as a replica");
      const refused = await nextEvent<ErrorMessage>("surelock:error",
        (m) => m.operation === "renew" && /READONLY/.test(m.error.message), 10_000);
      assert.equal((refused.error as ConnectionError).code, "ERR_SURELOCK_CONNECTION");
      assert.ok(leaseB.held, "a refused renewal is not a lost lease while the lease is still valid");
      await assert.rejects(leaseB.extend(), (e: unknown) => e instanceof ConnectionError && /READONLY/.test((e as Error).message));
      await assert.rejects(b.mutex("planned:other").tryAcquire(),
        (e: unknown) => e instanceof ConnectionError && /READONLY/.test((e as Error).message));
      assert.ok(leaseB.held);

      await leaseA.release();
      await leaseC2.release();
      assert.deepEqual(await keysWithoutTtl(promoted), []);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
      viaSentinel.disconnect();
      pinned.disconnect();
      await nodeRedis.close().catch(() => {});
      failovers.close();
    }
  });
});
