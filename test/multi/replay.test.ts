/**
 * multiLock's scripts replayed on a real server through the fault proxy (the reply cut after Redis
 * ran the script, ioredis sending it again): a replayed acquire founds one entry per key, a
 * replayed release of a re-entered set gives back one entry, a replayed final release is no loss.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { namesOf } from "../helpers/script-catalog.js";
import { assertEveryKeyExpires, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("multiLock replayed through the fault proxy", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  const closers: (() => Promise<unknown> | void)[] = [];
  before(async () => {
    server = await startStandalone();
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await assertEveryKeyExpires(server);
    await server.command("FLUSHALL");
  });
  after(async () => {
    await proxy.close();
    await server.stop();
  });

  function through(): Surelock {
    const redis = new Redis({ host: proxy.host, port: proxy.port, retryStrategy: () => 20, maxRetriesPerRequest: 5 });
    redis.on("error", () => {});
    const locks = new Surelock({ redis, ttl: 10_000, commandTimeout: 2_000 });
    closers.push(() => redis.disconnect(), () => locks.close());
    return locks;
  }

  /** The hold's entry count on `key`: its `n`, which a hold of one entry does not write (1); null when nothing holds it. */
  const entries = async (key: string): Promise<string | null> => {
    const [h, n] = (await server.command("HMGET", `surelock:{${key}}:lock`, "h", "n")) as (string | null)[];
    return h === null || h === undefined ? null : (n ?? "1");
  };

  it("a replayed acquire counts one entry on every key", async () => {
    const locks = through();
    const cut = proxy.cutReply({ scripts: namesOf("acquire-like") }, 5_000);
    const lease = await within(5_000, locks.multiLock(["ra", "rb"]).acquire());
    assert.equal((await cut)?.script, "acquire-multi");
    assert.deepEqual([await entries("ra"), await entries("rb")], ["1", "1"]);
    await lease.release();
    assert.deepEqual([await entries("ra"), await entries("rb")], [null, null]);
  });

  it("a replayed release of a re-entered set gives back one entry; a replayed final release is no loss", async () => {
    const locks = through();
    await locks.multiLock(["rc", "rd"]).withLock(async () => {
      const inner = await locks.multiLock(["rd", "rc"]).acquire();
      assert.equal(await entries("rc"), "2");
      const cut = proxy.cutReply({ scripts: namesOf("release-like") }, 5_000);
      await within(5_000, inner.release());
      assert.equal((await cut)?.script, "release-multi");
      assert.deepEqual([await entries("rc"), await entries("rd")], ["1", "1"], "the outer entry still holds both keys");
    });
    const lease = await locks.multiLock(["rc", "rd"]).acquire();
    const cut = proxy.cutReply({ scripts: namesOf("release-like") }, 5_000);
    await within(5_000, lease.release());
    assert.ok(await cut);
    assert.equal(lease.signal.aborted, false);
    assert.deepEqual([await entries("rc"), await entries("rd")], [null, null]);
  });
});
