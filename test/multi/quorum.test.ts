/**
 * multiLock in quorum mode (five independent primaries): a majority holds one hold on every key,
 * each key's token is the largest among the majority and the counters behind it are raised key by
 * key, overlapping sets in opposite orders never overlap nor deadlock, and a node down changes
 * nothing.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { delay, fiveNodes, heldOn, lockKey, within } from "../quorum/support.js";

describe("multiLock in quorum mode", () => {
  const five = fiveNodes();

  it("holds every key on a majority, excludes a mutex of each key, and frees them all at release", async () => {
    const locks = five.quorum(5_000);
    const other = five.quorum(5_000);
    const lease = await locks.multiLock(["qa", "qb"]).acquire();
    for (const key of ["qa", "qb"]) {
      assert.ok((await heldOn(five.nodes, key)).filter((x) => x === 1).length >= 3, `${key} held on a majority`);
      assert.equal(await other.mutex(key).tryAcquire(), null);
    }
    const hold = await five.nodes[0]!.command("HGET", lockKey("qa"), "h");
    assert.equal(await five.nodes[0]!.command("HGET", lockKey("qb"), "h"), hold, "one hold on both keys");
    await lease.release();
    for (const key of ["qa", "qb"]) assert.deepEqual(await heldOn(five.nodes, key), [0, 0, 0, 0, 0]);
  });

  it("takes each key's largest token among the majority and raises the counters behind it, key by key", async () => {
    const locks = five.quorum(5_000);
    // Node 2's counter for qd is far ahead (it restarted with a clock ahead, say).
    await five.nodes[2]!.command("HSET", lockKey("qd"), "c", "9000000000000000");
    await five.nodes[2]!.command("PEXPIRE", lockKey("qd"), 60_000);
    const lease = await locks.multiLock(["qc", "qd"]).acquire();
    const qd = lease.fencingTokens.get("qd")!;
    assert.equal(qd, 9000000000000001n, "the largest token among the votes");
    assert.ok(lease.fencingTokens.get("qc")! < qd, "qc keeps its own register");
    for (const node of five.nodes) {
      assert.ok(BigInt(String(await node.command("HGET", lockKey("qd"), "c"))) >= qd, `qd's counter on ${node.port} raised`);
    }
    await lease.release();
    const next = await locks.mutex("qd").acquire();
    assert.ok(next.fencingToken > qd, "the next hold of qd gets a larger token from any majority");
    await next.release();
  });

  it("the watchdog renews every key on every node: a set held for many ttls stays held", async () => {
    const locks = five.quorum(300, { commandTimeout: 100 });
    const lease = await locks.multiLock(["qr1", "qr2"]).acquire();
    await delay(1_200); // four ttls: the lease is not lost meanwhile, only renewals keep it
    assert.equal(lease.held, true);
    for (const key of ["qr1", "qr2"]) assert.deepEqual(await heldOn(five.nodes, key), [1, 1, 1, 1, 1], `${key} renewed on every node`);
    await lease.release();
  });

  it("overlapping sets in opposite orders, two nodes down: never two holders of a key, no deadlock", async () => {
    await five.kill([3, 4]);
    const a = five.quorum(5_000);
    const b = five.quorum(5_000);
    const inside = new Map<string, number>();
    let sections = 0;
    const run = async (locks: typeof a, keys: string[]): Promise<void> => {
      for (let i = 0; i < 8; i++) {
        await locks.multiLock(keys).withLock(async () => {
          for (const k of keys) {
            assert.equal(inside.get(k) ?? 0, 0, `${k} held twice`);
            inside.set(k, 1);
          }
          await new Promise((r) => setImmediate(r));
          for (const k of keys) inside.set(k, 0);
          sections++;
        }, { timeout: 20_000 });
      }
    };
    await within(30_000, Promise.all([run(a, ["o1", "o2"]), run(b, ["o2", "o1"]), run(a, ["o2", "o3"]), run(b, ["o3", "o1"])]), "every section");
    assert.equal(sections, 32);
  });
});
