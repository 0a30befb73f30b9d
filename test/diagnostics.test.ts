import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, before, describe, it } from "node:test";
import { channels } from "../src/index.js";
import { aborted, Harness } from "./helpers/fixtures.js";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";

describe("diagnostics_channel events", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  after(async () => { await h.cleanup(); await server.stop(); });

  it("acquire, extend, release and lost carry the key, the fencing token and timings", async () => {
    const seen: Record<string, Record<string, unknown>[]> = {};
    const names = ["acquire", "release", "extend", "lost"] as const;
    const listeners = names.map((name) => {
      const listener = (m: unknown): void => { (seen[name] ??= []).push(m as Record<string, unknown>); };
      diagnostics.subscribe(`surelock:${name}`, listener);
      return () => diagnostics.unsubscribe(`surelock:${name}`, listener);
    });
    try {
      const locks = h.locks({ ttl: 300 });
      const lease = await locks.mutex("observed").acquire();
      await lease.extend();
      await lease.release();
      const lost = await locks.mutex("observed").acquire();
      await server.command("DEL", "surelock:{observed}:lock");
      await aborted(lost.signal, 2_000);
      await lost.release().catch(() => {});
      assert.deepEqual(seen.acquire?.map((m) => [m.key, m.fencingToken]), [["observed", lease.fencingToken], ["observed", lost.fencingToken]]);
      assert.equal(typeof seen.acquire?.[0]?.waitedMs, "number");
      assert.ok(seen.extend?.some((m) => m.automatic === false && m.key === "observed"));
      assert.equal(seen.release?.[0]?.fencingToken, lease.fencingToken);
      assert.equal(typeof seen.release?.[0]?.heldMs, "number");
      assert.deepEqual(seen.lost?.map((m) => [m.key, m.reason]), [["observed", "expired"]]);
    } finally {
      for (const unsubscribe of listeners) unsubscribe();
    }
  });

  it("exports every channel by name", () => {
    assert.deepEqual(Object.values(channels).map((c) => c.name).sort(),
      ["surelock:acquire", "surelock:error", "surelock:extend", "surelock:lost", "surelock:release", "surelock:wait"]);
  });
});
