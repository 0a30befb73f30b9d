/**
 * multiLock on a Redis Cluster (3 primaries): keys with a common hash tag share a slot and are
 * taken by one script on the primary that owns it, wake-ups come by sharded pub/sub on each key's
 * channel, and a set that spans slots is refused at the call, before any I/O, naming the slots.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Cluster } from "ioredis";
import { InvalidArgumentError, Surelock } from "../../src/index.js";
import { KeySpace, slotOf } from "../../src/keys.js";
import { keysWithoutTtl } from "../deployments/support.js";
import { startCluster, stopAll, type ClusterSet } from "../helpers/redis-topology.js";
import { quietFor, startsWaiting, within } from "../helpers/fixtures.js";

after(stopAll);

describe("multiLock on a Cluster", () => {
  let set: ClusterSet;
  const opened: { locks: Surelock; cluster: Cluster }[] = [];
  before(async () => { set = await startCluster({ primaries: 3 }); });
  after(() => set?.stop());
  afterEach(async () => {
    for (const { locks, cluster } of opened.splice(0)) {
      await locks.close();
      cluster.disconnect();
    }
    for (const primary of set.primaries) assert.deepEqual(await keysWithoutTtl(primary), [], `keys without TTL on ${primary.port}`);
  });

  function locks(): Surelock {
    const cluster = new Cluster(set.startupNodes(), { redisOptions: { maxRetriesPerRequest: 2 } });
    cluster.on("error", () => {});
    const made = new Surelock({ redis: cluster, ttl: 5_000 });
    opened.push({ locks: made, cluster });
    return made;
  }

  const lockSlot = (key: string): number => slotOf(new KeySpace("surelock").exclusive(key).lock);

  it("takes keys with a common hash tag in one slot, excludes their mutexes, and wakes a waiter by sharded pub/sub", async () => {
    const keys = ["{order:7}:lines", "{order:7}:stock", "{order:7}:invoice"];
    assert.equal(new Set(keys.map(lockSlot)).size, 1, "one slot");
    const one = locks();
    const two = locks();
    const stock = await two.mutex("{order:7}:stock").acquire();
    const multi = one.multiLock(keys);
    const waits = startsWaiting(multi.key);
    const pending = multi.acquire({ timeout: 10_000 });
    await waits;
    await stock.release();
    const lease = await within(5_000, pending, "the set after the mutex's release");
    assert.ok(lease.fencingTokens.get("{order:7}:stock")! > stock.fencingToken);
    for (const key of keys) assert.equal(await two.mutex(key).tryAcquire(), null, `${key} is held by the set`);
    await lease.release();
    const again = await two.mutex("{order:7}:lines").tryAcquire();
    assert.ok(again);
    await again.release();
  });

  it("the watchdog renews every key of the set on the slot's primary: held for many ttls", async () => {
    const cluster = new Cluster(set.startupNodes(), { redisOptions: { maxRetriesPerRequest: 2 } });
    cluster.on("error", () => {});
    const made = new Surelock({ redis: cluster, ttl: 300 });
    opened.push({ locks: made, cluster });
    const lease = await made.multiLock(["{batch}:a", "{batch}:b"]).acquire();
    await quietFor(1_200); // four ttls: the lease is not lost meanwhile, only renewals keep it
    assert.equal(lease.held, true);
    assert.equal(await made.mutex("{batch}:b").tryAcquire(), null);
    await lease.release();
  });

  it("refuses keys of different slots at the call, before any I/O, saying which key is in which slot", () => {
    const made = locks();
    const [a, b] = ["cart", "payment"];
    assert.notEqual(lockSlot(a), lockSlot(b));
    try {
      made.multiLock([a, b]);
      assert.fail("no error");
    } catch (error) {
      assert.ok(error instanceof InvalidArgumentError);
      assert.equal(error.argument, "keys");
      assert.match(error.message, new RegExp(`"cart" in slot ${lockSlot(a)}; "payment" in slot ${lockSlot(b)}`));
      assert.match(error.message, /hash tag/);
    }
  });
});
