import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { assertEveryKeyExpires, Harness, quietFor, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("reentrancy", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertEveryKeyExpires(server); await server.command("FLUSHALL"); });
  after(() => server.stop());
  const entries = async (key: string) => server.command("HGET", `surelock:{${key}}:lock`, "n");

  it("nested withLock of the same key in the same flow re-enters with the same fencing token", async () => {
    const locks = h.locks();
    const result = await within(2_000, locks.withLock("nested", async (outer) =>
      locks.withLock("nested", async (inner) => {
        assert.equal(inner.fencingToken, outer.fencingToken);
        assert.equal(await entries("nested"), "2");
        return locks.mutex("nested").withLock(async () => entries("nested"));
      })));
    assert.equal(result, "3");
    assert.equal(await server.command("HEXISTS", "surelock:{nested}:lock", "o"), 0, "freed at the last release");
  });

  it("acquire() inside withLock re-enters too, and the lock is freed only at the last release", async () => {
    const locks = h.locks();
    await locks.withLock("inner-acquire", async () => {
      const inner = await within(2_000, locks.mutex("inner-acquire").acquire());
      await inner.release();
      await inner.release(); // a second release of the same lease is a no-op ...
      assert.equal(await entries("inner-acquire"), "1", "... and never frees the outer entry");
    });
    assert.equal(await server.command("HEXISTS", "surelock:{inner-acquire}:lock", "o"), 0);
  });

  it("sibling flows do not re-enter each other's locks: they wait", async () => {
    const locks = h.locks();
    const order: string[] = [];
    await Promise.all(["a", "b"].map((name) => locks.withLock("siblings", async () => {
      order.push(`${name}:in`);
      await quietFor(30);
      order.push(`${name}:out`);
    })));
    assert.deepEqual(order.map((s) => s.split(":")[1]), ["in", "out", "in", "out"]);
  });

  it("two Surelock instances never re-enter each other's locks", async () => {
    const a = h.locks();
    const b = h.locks();
    await a.withLock("instances", async () => {
      assert.equal(await b.mutex("instances").tryAcquire(), null);
    });
  });

  it("an explicit owner shares the lock across instances (as across processes)", async () => {
    const a = h.locks();
    const b = h.locks();
    const first = await a.mutex("shared-owner").acquire({ owner: "job-42" });
    const second = await within(2_000, b.mutex("shared-owner").acquire({ owner: "job-42" }));
    assert.equal(second.fencingToken, first.fencingToken);
    assert.equal(await entries("shared-owner"), "2");
    assert.equal(await h.locks().mutex("shared-owner").tryAcquire({ owner: "someone-else" }), null);
    await first.release();
    assert.equal(await entries("shared-owner"), "1", "the other entry still holds it");
    assert.equal(await second.isHeld(), true);
    await second.release();
    assert.equal(await server.command("HEXISTS", "surelock:{shared-owner}:lock", "o"), 0);
  });

  it("sharers of one hold never cut each other's time short: a shorter extend or renewal leaves the key's life as long as promised", async () => {
    // Torture seed 13: a process that joined by owner renewed with its own, shorter ttl; the key
    // expired while the process that had extended the hold still trusted it, and a third one took it.
    const long = h.locks({ ttl: 2_000 });
    const short = h.locks({ ttl: 600 });
    const first = await long.mutex("sharers").acquire({ owner: "job-7" });
    await first.extend(30_000);
    const second = await short.mutex("sharers").acquire({ owner: "job-7" });
    await second.extend(600);
    const pttl = Number(await server.command("PTTL", "surelock:{sharers}:lock"));
    assert.ok(pttl > 25_000, `the key lives as long as the first sharer was promised (${pttl} ms left)`);
    await second.release();
    assert.equal(await first.isHeld(), true);
    await first.release();
  });

  it("a new acquisition after release gets a larger fencing token", async () => {
    const locks = h.locks();
    const mutex = locks.mutex("tokens");
    const one = await mutex.acquire();
    await one.release();
    const two = await mutex.acquire();
    assert.ok(two.fencingToken > one.fencingToken);
    await two.release();
  });

  it("await using releases at the end of the block", async () => {
    const locks = h.locks();
    {
      await using lease = await locks.mutex("using").acquire();
      assert.equal(lease.held, true);
    }
    assert.equal(await server.command("HEXISTS", "surelock:{using}:lock", "o"), 0);
  });
});
