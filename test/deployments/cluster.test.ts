/**
 * Cluster: 3 primaries with a replica each, real processes. 1,000 lock keys contended by 3
 * processes while slots move (CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT NODE);
 * the watchdog's one renewal call per slot; wake-ups by sharded pub/sub that follow a migrated
 * slot, and an election's and a latch's announcements; node-redis' cluster client; and the
 * `replicas` option on the node that owns the slot.
 */
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { fileURLToPath } from "node:url";
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { ConnectionError, Surelock, type ExtendMessage } from "../../src/index.js";
import { KeySpace, slotOf } from "../../src/keys.js";
import { startCluster, stopAll, type ClusterSet, type RedisServer } from "../helpers/redis-topology.js";
import { commandCalls, eventually, within } from "../helpers/fixtures.js";
import { keysWithoutTtl, nextEvent } from "./support.js";

after(stopAll);

interface SlotOwner {
  readonly server: RedisServer;
  readonly id: string;
}

/** The primary that owns `slot`, per CLUSTER SLOTS on `any` node. */
async function ownerOf(set: ClusterSet, slot: number): Promise<SlotOwner> {
  const ranges = (await set.primaries[0]!.command("CLUSTER", "SLOTS")) as [number, number, [string, number, string]][];
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  assert.ok(range, `slot ${slot} is not served`);
  const [, , [, port, id]] = range;
  const server = set.primaries.find((p) => p.port === port);
  assert.ok(server, `slot ${slot} is served by ${port}, not one of our primaries`);
  return { server, id };
}

interface Migration {
  readonly slot: number;
  readonly from: SlotOwner;
  readonly to: SlotOwner;
  /** Keys MIGRATEd so far. */
  moved: number;
}

/** Starts moving `slot` to another primary: IMPORTING on the target, MIGRATING on the source. */
async function beginMigration(set: ClusterSet, slot: number): Promise<Migration> {
  const from = await ownerOf(set, slot);
  const targetServer = set.primaries.find((p) => p !== from.server)!;
  const to = { server: targetServer, id: String(await targetServer.command("CLUSTER", "MYID")) };
  await to.server.command("CLUSTER", "SETSLOT", slot, "IMPORTING", from.id);
  await from.server.command("CLUSTER", "SETSLOT", slot, "MIGRATING", to.id);
  return { slot, from, to, moved: 0 };
}

/** MIGRATEs the keys the source still has in the slot, in batches. */
async function moveKeys(set: ClusterSet, m: Migration): Promise<void> {
  for (;;) {
    const keys = (await m.from.server.command("CLUSTER", "GETKEYSINSLOT", m.slot, 100)) as string[];
    if (keys.length === 0) return;
    await m.from.server.command("MIGRATE", m.to.server.host, m.to.server.port, "", 0, 5_000, "KEYS", ...keys);
    m.moved += keys.length;
  }
}

/** Ends the move: SETSLOT NODE on the target, the source, then every other primary. */
async function finishMigration(set: ClusterSet, m: Migration): Promise<void> {
  await moveKeys(set, m); // keys created on the source meanwhile
  await m.to.server.command("CLUSTER", "SETSLOT", m.slot, "NODE", m.to.id);
  await m.from.server.command("CLUSTER", "SETSLOT", m.slot, "NODE", m.to.id);
  for (const other of set.primaries) {
    if (other !== m.from.server && other !== m.to.server) await other.command("CLUSTER", "SETSLOT", m.slot, "NODE", m.to.id);
  }
}

/** Moves `slot` to another primary the way redis-cli does. Returns the keys moved and the new owner. */
async function migrateSlot(set: ClusterSet, slot: number): Promise<{ moved: number; to: SlotOwner }> {
  const m = await beginMigration(set, slot);
  await moveKeys(set, m);
  await finishMigration(set, m);
  return m;
}

function clusterClient(set: ClusterSet): Cluster {
  const cluster = new Cluster(set.startupNodes(), { redisOptions: { maxRetriesPerRequest: 2 } });
  cluster.on("error", () => {});
  return cluster;
}

/** The slot of a user key's lock (its hash tag is the whole user key, braces included). */
const lockSlot = (key: string): number => slotOf(new KeySpace("surelock").exclusive(key).lock);

/** `count` keys whose slots are all different (and differ from `avoid`). */
function keysInDistinctSlots(prefix: string, count: number, avoid = new Set<number>()): string[] {
  const keys: string[] = [];
  const used = new Set(avoid);
  for (let i = 0; keys.length < count; i++) {
    const slot = slotOf(`${prefix}${i}`);
    if (used.has(slot)) continue;
    used.add(slot);
    keys.push(`${prefix}${i}`);
  }
  return keys;
}

/** A key other than `key` in the same slot. */
function sameSlotAs(key: string): string {
  const slot = slotOf(key);
  for (let i = 0; ; i++) if (slotOf(`${key}-twin${i}`) === slot) return `${key}-twin${i}`;
}

interface WorkerRun {
  readonly started: Promise<void>;
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function runWorker(ports: string, args: (string | number)[]): WorkerRun {
  const file = fileURLToPath(new URL("./cluster-worker.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", file, ports, ...args.map(String)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => { markStarted = resolve; });
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk;
    if (stdout.includes("started\n")) markStarted();
  });
  child.stderr.on("data", (chunk: Buffer) => { stderr += chunk; });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on("exit", (code) => {
      markStarted();
      resolve({ code, stdout, stderr });
    });
  });
  process.once("exit", () => child.kill("SIGKILL"));
  return { started, done };
}

async function allKeysExpire(set: ClusterSet): Promise<void> {
  for (const primary of set.primaries) assert.deepEqual(await keysWithoutTtl(primary), [], `keys without TTL on ${primary.port}`);
}

void describe("Cluster (3 primaries, 1 replica each)", () => {
  let set: ClusterSet;
  before(async () => {
    set = await startCluster({ primaries: 3, replicasPerPrimary: 1 });
  });
  after(() => set?.stop());
  afterEach(() => allKeysExpire(set));

  void it("1,000 keys contended by 3 processes while 5 hot slots migrate: every counter is exact and tokens rise with it", async () => {
    const startedAt = performance.now();
    const redirectsBefore = await redirects(set);
    const ports = set.primaries.map((p) => p.port).join(",");
    const hot = 20;
    const workers = [0, 1, 2].map(() => runWorker(ports, [1_000, hot, 16]));
    await within(60_000, Promise.all(workers.map((w) => w.started)), "workers to start");

    // Move the slots of five hot keys (locked by all three processes all the time) elsewhere.
    let moved = 0;
    for (let k = 0; k < 5; k++) moved += (await migrateSlot(set, slotOf(`k${k}`))).moved;
    assert.ok(moved > 0, "the migrations moved keys of held or recently held locks");

    const results = await within(120_000, Promise.all(workers.map((w) => w.done)), "workers to finish");
    const sections = new Map<number, { value: number; token: bigint }[]>();
    let retries = 0;
    for (const { code, stdout, stderr } of results) {
      assert.equal(code, 0, `worker failed: ${stderr.slice(-2_000)}`);
      for (const line of stdout.trim().split("\n")) {
        const [a = "", b = "", c = ""] = line.split(" ");
        if (a === "started" || a === "done") continue;
        if (a === "retries") {
          retries += Number(b);
          continue;
        }
        const list = sections.get(Number(a)) ?? [];
        list.push({ value: Number(b), token: BigInt(c) });
        sections.set(Number(a), list);
      }
    }
    assert.equal(sections.size, 1_000, "every key was locked");
    const cluster = clusterClient(set);
    try {
      for (const [key, list] of sections) {
        list.sort((x, y) => x.value - y.value);
        // Each section saw the previous one's write: values 1..n, none lost, none repeated.
        assert.deepEqual(list.map((s) => s.value), list.map((_, i) => i + 1), `counter of k${key}`);
        for (let i = 1; i < list.length; i++) assert.ok(list[i]!.token > list[i - 1]!.token, `tokens of k${key} rise`);
        assert.equal(Number(await cluster.get(`data:{k${key}}:count`)), list.length, `stored counter of k${key}`);
      }
    } finally {
      cluster.disconnect();
    }
    const total = [...sections.values()].reduce((n, l) => n + l.length, 0);
    const redirected = diff(await redirects(set), redirectsBefore);
    console.log(`# cluster: ${total} sections on ${sections.size} keys by 3 processes, ${moved} keys migrated, ` +
      `redirections ${JSON.stringify(redirected)}, ${retries} acquires repeated, ${Math.round(performance.now() - startedAt)} ms`);
    assert.ok((redirected.MOVED ?? 0) + (redirected.ASK ?? 0) + (redirected.TRYAGAIN ?? 0) > 0, "the clients met the migration");
  });

  void it("the watchdog renews with one EVALSHA per slot per tick, on the primary that owns the slot", async () => {
    const cluster = clusterClient(set);
    const locks = new Surelock({ redis: cluster, ttl: 3_000 });
    let listener: ((m: unknown) => void) | undefined;
    try {
      const keys = keysInDistinctSlots("renew:", 11, new Set([lockSlot("{tenant-7}:orders:42")]));
      keys.push(sameSlotAs(keys[0]!), sameSlotAs(keys[1]!));
      // Keys that start with the same {tag} share a slot, and so one renewal call.
      keys.push("{tenant-7}:orders:42", "{tenant-7}:orders:43", "{tenant-7}:invoices:9");
      const leases = await Promise.all(keys.map((key) => locks.mutex(key).acquire()));
      const renewed = new Set<string>();
      let allSeen: () => void = () => {};
      const allRenewed = new Promise<void>((resolve) => { allSeen = resolve; });
      listener = (m: unknown): void => {
        const message = m as ExtendMessage;
        if (message.automatic) renewed.add(message.key);
        if (renewed.size === keys.length) allSeen();
      };
      subscribe("surelock:extend", listener);
      const before = await Promise.all(set.primaries.map((p) => commandCalls(p, "evalsha")));
      await within(5_000, allRenewed, "one renewal of every lease");
      const after = await Promise.all(set.primaries.map((p) => commandCalls(p, "evalsha")));
      const expected = await Promise.all(set.primaries.map(async (p) => {
        let slots = 0;
        for (const slot of new Set(keys.map(lockSlot))) if ((await ownerOf(set, slot)).server === p) slots++;
        return slots;
      }));
      assert.deepEqual(after.map((n, i) => n - before[i]!), expected, "EVALSHA calls per primary = slots it owns");
      assert.equal(expected.reduce((a, b) => a + b, 0), 12);
      await Promise.all(leases.map((l) => l.release()));
    } finally {
      if (listener) unsubscribe("surelock:extend", listener);
      await locks.close();
      cluster.disconnect();
    }
  });

  void it("wake-ups go by sharded pub/sub (one subscriber per primary) and follow a slot that migrated", async () => {
    const cluster = clusterClient(set);
    const waitersClient = clusterClient(set);
    const holder = new Surelock({ redis: cluster, ttl: 10_000 });
    const waiters = new Surelock({ redis: waitersClient, ttl: 10_000, pollInterval: 30_000 });
    try {
      // One key per primary: the waiters' instance subscribes on each of them.
      const keys: string[] = [];
      for (const primary of set.primaries) {
        for (let i = 0; ; i++) {
          if ((await ownerOf(set, slotOf(`wake:${i}`))).server === primary && !keys.includes(`wake:${i}`)) {
            keys.push(`wake:${i}`);
            break;
          }
        }
      }
      const wakeUp = async (key: string): Promise<void> => {
        const lease = await holder.mutex(key).acquire();
        const waiting = nextEvent("surelock:wait", (m: { key: string; phase: string }) => m.key === key && m.phase === "start", 2_000);
        const waiter = waiters.mutex(key).acquire({ timeout: 20_000 });
        await waiting;
        await eventually(async () => (await shardSubscribers(set, `surelock:{${key}}:wake`)) === 1, 5_000, `${key} subscribed on its primary`);
        await lease.release();
        // The poll interval is 30 s: only the announcement can wake the waiter this fast.
        const next = await within(3_000, waiter, `wake-up of ${key}`);
        await next.release();
      };
      for (const key of keys) await wakeUp(key);

      // A waiter whose slot moves while it waits: its subscription moves along.
      const key = keys[0]!;
      const lease = await holder.mutex(key).acquire();
      const waiting = nextEvent("surelock:wait", (m: { key: string; phase: string }) => m.key === key && m.phase === "start", 2_000);
      const waiter = waiters.mutex(key).acquire({ timeout: 25_000 });
      await waiting;
      const channel = `surelock:{${key}}:wake`;
      await eventually(async () => (await shardSubscribers(set, channel)) === 1, 5_000, "subscribed before the move");
      const { to } = await migrateSlot(set, slotOf(key));
      await eventually(async () => Number(((await to.server.command("PUBSUB", "SHARDNUMSUB", channel)) as [string, number])[1]) === 1,
        10_000, "subscription moved to the new owner");
      await lease.release();
      const next = await within(3_000, waiter, "wake-up after the migration");
      await next.release();
    } finally {
      await Promise.all([holder.close(), waiters.close()]);
      cluster.disconnect();
      waitersClient.disconnect();
    }
  });

  void it("elections and latches: announcements by sharded pub/sub reach observers and waiters on the slot's primary", async () => {
    const clients = [clusterClient(set), clusterClient(set)];
    const [leader, watcher] = clients.map((redis) => new Surelock({ redis, ttl: 10_000, pollInterval: 30_000 })) as [Surelock, Surelock];
    const stop = new AbortController();
    try {
      const changes = watcher.election("cluster-jobs").observe({ signal: stop.signal });
      assert.equal((await within(5_000, changes.next(), "the first reading")).value, null);
      const election = leader.election("cluster-jobs");
      const lease = await election.campaign({ value: "node-a" });
      assert.equal((await within(3_000, changes.next(), "the new leader")).value?.value, "node-a");
      await lease.release(); // no candidate waits: the store announces the vacancy (SPUBLISH)
      assert.equal((await within(3_000, changes.next(), "the vacancy")).value, null);
      // A poll of 30 s: only the opening's announcement can end this wait in time.
      const listening = nextEvent("surelock:latch", (m: { key: string; event: string }) => m.key === "cluster-batch" && m.event === "waiting", 5_000);
      const waiting = watcher.latch("cluster-batch", { count: 2 }).wait();
      await listening;
      await leader.latch("cluster-batch", { count: 2 }).countDown();
      await leader.latch("cluster-batch", { count: 2 }).countDown();
      await within(3_000, waiting, "the latch's opening");
    } finally {
      stop.abort();
      await Promise.all([leader.close(), watcher.close()]);
      for (const c of clients) c.disconnect();
    }
  });

  void it("node-redis createCluster: exclusion, wake-ups and replicas all work", async () => {
    const client = createCluster({ rootNodes: set.startupNodes().map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    client.on("error", () => {});
    await client.connect();
    const locks = new Surelock({ redis: client, ttl: 5_000, pollInterval: 30_000, replicas: { count: 1, timeout: 1_000 } });
    try {
      const keys = keysInDistinctSlots("nr:", 6);
      const waits = await Promise.all(set.primaries.map((p) => commandCalls(p, "wait")));
      const inside = new Map<string, number>();
      let overlaps = 0;
      await Promise.all(keys.flatMap((key) => [0, 1, 2].map(() => locks.withLock(key, async () => {
        inside.set(key, (inside.get(key) ?? 0) + 1);
        if (inside.get(key)! > 1) overlaps++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        inside.set(key, inside.get(key)! - 1);
      }))));
      assert.equal(overlaps, 0);
      const waitsAfter = await Promise.all(set.primaries.map((p) => commandCalls(p, "wait")));
      assert.ok(waitsAfter.reduce((a, b) => a + b, 0) - waits.reduce((a, b) => a + b, 0) >= keys.length * 3,
        "every acquire was followed by WAIT on its primary");
    } finally {
      await locks.close();
      await client.close().catch(() => {});
    }
  });

  void it("replicas: acquire and renewals WAIT on the slot's primary; with its replica stopped the acquire fails with ConnectionError and nothing stays held", async () => {
    const cluster = clusterClient(set);
    const locks = new Surelock({ redis: cluster, ttl: 3_000, replicas: { count: 1, timeout: 300 } });
    try {
      const keys = keysInDistinctSlots("wait:", 6);
      const waits = await Promise.all(set.primaries.map((p) => commandCalls(p, "wait")));
      const leases = await Promise.all(keys.map((key) => locks.mutex(key).acquire()));
      await nextEvent<ExtendMessage>("surelock:extend", (m) => m.automatic, 3_000);
      const waitsAfter = await Promise.all(set.primaries.map((p) => commandCalls(p, "wait")));
      for (let i = 0; i < set.primaries.length; i++) {
        const owned = (await Promise.all(keys.map(async (k) => (await ownerOf(set, slotOf(k))).server))).filter((s) => s === set.primaries[i]).length;
        assert.ok(waitsAfter[i]! - waits[i]! >= owned, `WAIT on primary ${i} for each acquire of a key it owns`);
      }
      await Promise.all(leases.map((l) => l.release()));

      // Stop the replica of the primary that owns `stalled`: WAIT there cannot be satisfied.
      const stalled = keys[0]!;
      const owner = await ownerOf(set, slotOf(stalled));
      const ownerId = owner.id;
      const replica = await findReplicaOf(set, ownerId);
      await replica.pause();
      try {
        const error = await locks.mutex(stalled).acquire().then(() => undefined, (e: unknown) => e);
        assert.ok(error instanceof ConnectionError, `got ${String(error)}`);
        assert.match(error.message, /0 of 1 required replicas acknowledged/);
        await eventually(async () => (await owner.server.command("HEXISTS", `surelock:{${stalled}}:lock`, "o")) === 0, 2_000,
          "the unacknowledged acquire was given back");
        // Keys on the other primaries are not affected.
        const other = keys.find((k) => slotOf(k) !== slotOf(stalled))!;
        const elsewhere = await locks.mutex(other).tryAcquire();
        if ((await ownerOf(set, slotOf(other))).id !== ownerId) assert.ok(elsewhere);
        await elsewhere?.release().catch(() => {});
      } finally {
        await replica.resume();
      }
    } finally {
      await locks.close();
      cluster.disconnect();
    }
  });

  void it("replicas during a slot migration: the write and its WAIT follow ASK and MOVED together; no lease is lost or doubled", async () => {
    const cluster = clusterClient(set);
    const locks = new Surelock({ redis: cluster, ttl: 3_000, replicas: { count: 1, timeout: 500 } });
    try {
      const a = "migrating:a";
      const b = sameSlotAs(a);
      const leaseA = await locks.mutex(a).acquire();
      const asksBefore = (await redirects(set)).ASK ?? 0;
      const m = await beginMigration(set, lockSlot(a));
      await moveKeys(set, m);
      assert.ok(m.moved >= 1, "a's lock hash (with its fencing counter) is on the importing node");

      // a's renewal: the source answers ASK, the pair goes to the importing node with ASKING.
      await nextEvent<ExtendMessage>("surelock:extend", (e) => e.key === a && e.automatic, 5_000);
      assert.ok(((await redirects(set)).ASK ?? 0) > asksBefore, "the renewal was redirected with ASK");
      // (Key commands would be redirected mid-migration; the slot's key lists are not.)
      const keysOn = async (server: RedisServer): Promise<string[]> =>
        (await server.command("CLUSTER", "GETKEYSINSLOT", m.slot, 100)) as string[];
      assert.ok((await keysOn(m.to.server)).includes(`surelock:{${a}}:lock`));
      assert.ok(!(await keysOn(m.from.server)).includes(`surelock:{${a}}:lock`));

      // b's acquire touches keys on neither node: TRYAGAIN until the slot settles, then MOVED.
      const acquiringB = locks.mutex(b).acquire();
      await finishMigration(set, m);
      const leaseB = await within(5_000, acquiringB, "acquire of b after the migration");
      assert.ok(leaseA.held && leaseB.held);
      assert.notEqual(leaseA.fencingToken, leaseB.fencingToken);
      // Exactly one copy of each lock, on the new owner.
      for (const key of [a, b]) {
        assert.ok((await keysOn(m.to.server)).includes(`surelock:{${key}}:lock`));
        assert.ok(!(await keysOn(m.from.server)).includes(`surelock:{${key}}:lock`));
      }
      assert.equal(await locks.mutex(a).tryAcquire(), null, "a is still held");
      await Promise.all([leaseA.release(), leaseB.release()]);
    } finally {
      await locks.close();
      cluster.disconnect();
    }
  });
});

/** MOVED / ASK / TRYAGAIN replies the primaries have sent (INFO errorstats). */
async function redirects(set: ClusterSet): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of set.primaries) {
    for (const [name, value] of Object.entries(await p.info("errorstats"))) {
      const kind = /^errorstat_(MOVED|ASK|TRYAGAIN)$/.exec(name)?.[1];
      if (kind) out[kind] = (out[kind] ?? 0) + Number(/count=(\d+)/.exec(value)?.[1] ?? 0);
    }
  }
  return out;
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}

/** Subscribers of a shard channel, summed over the primaries. */
async function shardSubscribers(set: ClusterSet, channel: string): Promise<number> {
  let total = 0;
  for (const p of set.primaries) total += Number(((await p.command("PUBSUB", "SHARDNUMSUB", channel)) as [string, number])[1]);
  return total;
}

async function findReplicaOf(set: ClusterSet, primaryId: string): Promise<RedisServer> {
  for (const r of set.replicas) {
    const nodes = String(await r.command("CLUSTER", "NODES"));
    const mine = nodes.split("\n").find((l) => l.includes("myself"));
    if (mine?.split(" ")[3] === primaryId) return r;
  }
  throw new Error(`no replica of ${primaryId}`);
}
