/**
 * One primary with one replica (no Sentinel): the `replicas` option's contract. WAIT follows
 * every acquire and renewal on the same connection; a shortfall fails an acquire (and gives the
 * lock back) and fails a renewal without losing the lease while it is valid. Custom adapters
 * without `commandThenWait` get WAIT through `command()`.
 */
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { ConnectionError, InvalidArgumentError, Surelock, type RedisAdapter, type ExtendMessage, type ErrorMessage } from "../../src/index.js";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { eventually } from "../helpers/fixtures.js";
import { LUA } from "../../src/scripts/lua.generated.js";
import { keysWithoutTtl, monitor, nextEvent, nextFrom } from "./support.js";

after(stopAll);

void describe("replicas option on a primary with one replica", () => {
  let primary: RedisServer;
  let replica: RedisServer;
  const clients: Redis[] = [];
  const client = (): Redis => {
    const redis = new Redis({ host: primary.host, port: primary.port, maxRetriesPerRequest: 1 });
    redis.on("error", () => {});
    clients.push(redis);
    return redis;
  };

  before(async () => {
    primary = await startStandalone();
    replica = await startStandalone({ args: ["--replicaof", primary.host, String(primary.port)] });
    await eventually(async () => (await replica.info("replication")).master_link_status === "up", 10_000, "replica linked");
    // After a diskless sync the primary streams to the replica only once it has sent its first
    // ACK (up to a second later): until then WAIT cannot be satisfied.
    await eventually(async () => {
      await primary.command("SET", "ready-probe", "1", "PX", 1_000);
      return (await primary.command("WAIT", 1, 100)) === 1;
    }, 5_000, "replica acknowledging writes");
  });
  after(async () => {
    for (const c of clients.splice(0)) c.disconnect();
  });
  afterEach(async () => {
    assert.deepEqual(await keysWithoutTtl(primary), []);
  });

  void it("an acquire and each renewal are followed by WAIT on the same connection, and succeed once the replica has them", async () => {
    const locks = new Surelock({ redis: client(), ttl: 1_500, replicas: { count: 1, timeout: 500 } });
    const wire = await monitor(primary);
    try {
      const lease = await locks.mutex("single:a").acquire();
      await nextEvent<ExtendMessage>("surelock:extend", (m) => m.key === "single:a" && m.automatic, 3_000);
      assert.equal(await replica.command("HEXISTS", "surelock:{single:a}:lock", "o"), 1);
      await lease.release();
      await eventually(() => wire.seen.some((s) => s.args[0] === "EVALSHA" && s.args[1] === LUA.release.sha), 2_000, "release seen");
      // Each write that grants or renews the lease: the same connection's next command is WAIT 1 500.
      const writes = wire.seen.flatMap((s, i) =>
        (s.args[0] === "EVALSHA" || s.args[0] === "EVAL") && ([LUA.acquire.sha, LUA.keepalive.sha, LUA.acquire.lua, LUA.keepalive.lua] as string[]).includes(s.args[1]!) ? [i] : []);
      assert.ok(writes.length >= 2, "an acquire and a renewal");
      for (const i of writes) assert.deepEqual(nextFrom(wire.seen, i)?.args, ["WAIT", "1", "500"]);
      // A release is not waited for.
      const release = wire.seen.findIndex((s) => s.args[1] === LUA.release.sha);
      assert.notEqual(nextFrom(wire.seen, release)?.args[0], "WAIT");
    } finally {
      wire.stop();
      await locks.close();
    }
  });

  void it("with the replica stopped: acquire rejects with ConnectionError (0 of 1) and leaves no lock; a renewal falls short without losing the lease", async () => {
    const locks = new Surelock({ redis: client(), ttl: 3_000, replicas: { count: 1, timeout: 200 } });
    try {
      const held = await locks.mutex("single:held").acquire();
      await replica.pause();
      try {
        const error = await locks.mutex("single:b").acquire().then(() => undefined, (e: unknown) => e);
        assert.ok(error instanceof ConnectionError);
        assert.equal(error.code, "ERR_SURELOCK_CONNECTION");
        assert.match(error.message, /0 of 1 required replicas acknowledged the write within 200 ms/);
        await eventually(async () => (await primary.command("HEXISTS", "surelock:{single:b}:lock", "o")) === 0, 2_000, "lock given back");

        const shortfall = await nextEvent<ErrorMessage>("surelock:error", (m) => m.operation === "renew", 3_000);
        assert.match(shortfall.error.message, /0 of 1 required replicas/);
        assert.ok(held.held, "a renewal that falls short is a failed renewal, not a lost lease");
      } finally {
        await replica.resume();
      }
      await nextEvent<ExtendMessage>("surelock:extend", (m) => m.key === "single:held" && m.automatic, 3_000);
      assert.ok(held.held);
      await held.release();
    } finally {
      await locks.close();
    }
  });

  void it("a custom adapter without commandThenWait gets WAIT through command(), after the write", async () => {
    const redis = client();
    const adapter: RedisAdapter = {
      name: "custom",
      cluster: false,
      evalsha: (sha, keys, args) => redis.call("EVALSHA", sha, keys.length, ...keys, ...args),
      eval: (script, keys, args) => redis.call("EVAL", script, keys.length, ...keys, ...args),
      command: ([name, ...args]) => redis.call(String(name), ...args),
      createSubscriber: () => Promise.reject(new Error("not used here")),
    };
    const locks = new Surelock({ redis: adapter, replicas: { count: 1, timeout: 500 } });
    const wire = await monitor(primary);
    try {
      const lease = await locks.mutex("single:custom").acquire();
      await lease.release();
      const acquire = wire.seen.findIndex((s) => s.args[0] === "EVALSHA" && s.args[1] === LUA.acquire.sha);
      assert.notEqual(acquire, -1);
      assert.deepEqual(nextFrom(wire.seen, acquire)?.args, ["WAIT", "1", "500"]);
    } finally {
      wire.stop();
      await locks.close();
    }
  });

  void it("options.replicas is checked before any I/O", () => {
    const redis = client();
    for (const replicas of [{ count: 0, timeout: 100 }, { count: 1, timeout: 0 }, { count: 1.5, timeout: 100 }, { count: 1 }, { count: 1, timeout: 100, extra: 1 }, 3]) {
      assert.throws(() => new Surelock({ redis, replicas: replicas as never }), (e: unknown) =>
        e instanceof InvalidArgumentError && e.argument.startsWith("options.replicas"));
    }
  });
});
