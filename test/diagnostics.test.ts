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

  it("leader and latch: an election's changes in the candidate's process, a latch's count downs and waits", async () => {
    const seen: Record<string, Record<string, unknown>[]> = {};
    const names = ["leader", "latch"] as const;
    const listeners = names.map((name) => {
      const listener = (m: unknown): void => { (seen[name] ??= []).push(m as Record<string, unknown>); };
      diagnostics.subscribe(`surelock:${name}`, listener);
      return () => diagnostics.unsubscribe(`surelock:${name}`, listener);
    });
    try {
      const locks = h.locks();
      const election = locks.election("chosen");
      const lease = await election.campaign({ value: "secret-ish" });
      await election.proclaim("another");
      await election.resign();
      assert.deepEqual(seen.leader, ["elected", "proclaimed", "resigned"].map((event) =>
        ({ name: "chosen", event, owner: lease.owner, fencingToken: lease.fencingToken })), "no value in the payload");
      const latch = locks.latch("gate", { count: 2 });
      await latch.countDown({ id: "a" });
      await latch.countDown({ id: "a" });
      const waiting = latch.wait();
      await latch.countDown();
      await waiting;
      const events = seen.latch?.map((m) => [m.event, m.count, m.counted]);
      assert.deepEqual(events?.filter((e) => e[0] === "countDown"), [["countDown", 1, true], ["countDown", 1, false], ["countDown", 0, true]]);
      assert.ok(events?.some((e) => e[0] === "open" && e[1] === 0));
      assert.equal(typeof seen.latch?.find((m) => m.event === "open")?.waitedMs, "number");
    } finally {
      for (const unsubscribe of listeners) unsubscribe();
    }
  });

  it("exports every channel by name", () => {
    assert.deepEqual(Object.values(channels).map((c) => c.name).sort(),
      ["surelock:acquire", "surelock:error", "surelock:extend", "surelock:latch", "surelock:leader", "surelock:lost", "surelock:release", "surelock:wait"]);
  });
});
