/** The countdown latch against real redis-servers: counted once per id, opened by pub/sub, every key expiring. */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { describe, it } from "node:test";
import { ClosedError, ConflictError, type LatchMessage, LockTimeoutError, Surelock } from "../../src/index.js";
import { assertEveryKeyExpires, eventually, Harness, quietFor, standaloneSuite, within } from "../helpers/fixtures.js";
import { type RedisServer, startPrimaries } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";
import { fastClient, ready } from "../quorum/support.js";

describe("countdown latch", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  it("wait() opens when the last of 3 processes counts down, woken by the announcement (not by its safety poll)", async () => {
    const opened: LatchMessage[] = [];
    const onLatch = (m: unknown): void => { if ((m as LatchMessage).event === "open") opened.push(m as LatchMessage); };
    diagnostics.subscribe("surelock:latch", onLatch);
    h.onCleanup(() => { diagnostics.unsubscribe("surelock:latch", onLatch); });
    // A poll of a minute: only the announcement can open the wait in time.
    const latch = h.locks({ pollInterval: 60_000 }).latch("batch", { count: 3 });
    const waiting = latch.wait();
    let done = false;
    void waiting.then(() => { done = true; });
    for (const i of [1, 2]) {
      const r = await runFixture("count-down", [server.port, "batch", 3]).done;
      assert.equal(r.stdout, `left ${3 - i}\n`, r.stderr);
    }
    await quietFor(100);
    assert.equal(done, false, "still closed at 1 left");
    const last = await runFixture("count-down", [server.port, "batch", 3]).done;
    assert.equal(last.stdout, "left 0\n");
    const lastExited = performance.now();
    await within(2_000, waiting, "the wait to open");
    assert.equal(opened.length, 1);
    console.log(`# latch: wait opened ${(performance.now() - lastExited).toFixed(1)} ms after the last counting process exited`);
    assert.equal(await latch.count(), 0);
    // An open latch stays open: later waits resolve at once, later count downs change nothing.
    await within(1_000, latch.wait({ timeout: 0 }));
    assert.equal(await latch.countDown(), 0);
  });

  it("counts each id once (across processes), renews its TTL on every count down, and is new again once it expired", async () => {
    const latch = h.locks().latch("ids", { count: 3, ttl: 1_000 });
    assert.equal(await latch.count(), 3, "a latch Redis does not have: its whole count");
    assert.equal(await server.command("EXISTS", "surelock:latch:{ids}:state"), 0, "count() writes nothing");
    assert.equal((await runFixture("count-down", [server.port, "ids", 3, "worker-1"]).done).stdout, "left 2\n");
    assert.equal((await runFixture("count-down", [server.port, "ids", 3, "worker-1"]).done).stdout, "left 2\n", "the same id counts once");
    assert.equal(await latch.countDown({ id: "worker-1" }), 2);
    assert.equal(await latch.countDown(), 1);
    // Set anew by the count down (the fixtures' count downs, a second or more ago, set it too).
    const pttl = Number(await server.command("PTTL", "surelock:latch:{ids}:state"));
    assert.ok(pttl > 500 && pttl <= 1_000, `PTTL ${pttl}`);
    // Its ttl runs out: gone, and a latch of that name starts over.
    await eventually(async () => (await server.command("EXISTS", "surelock:latch:{ids}:state")) === 0, 3_000, "the latch to expire");
    assert.equal(await latch.count(), 3);
  });

  it("a caller with another count gets ConflictError and changes nothing", async () => {
    await h.locks().latch("mismatch", { count: 2 }).countDown();
    const other = h.locks().latch("mismatch", { count: 5 });
    await assert.rejects(other.countDown(), ConflictError);
    await assert.rejects(other.count(), ConflictError);
    await assert.rejects(other.wait({ timeout: 100 }), ConflictError);
    assert.equal(await h.locks().latch("mismatch", { count: 2 }).count(), 1);
  });

  it("wait() rejects with LockTimeoutError after its timeout (0: one look), with the signal's reason, and with ClosedError on close()", async () => {
    const locks = h.locks();
    const latch = locks.latch("closed", { count: 1 });
    await assert.rejects(latch.wait({ timeout: 0 }), (e: unknown) => e instanceof LockTimeoutError && /latch "closed"/.test(e.message));
    await assert.rejects(latch.wait({ timeout: 150 }), (e: unknown) => e instanceof LockTimeoutError && e.waitedMs >= 150);
    const stop = new AbortController();
    const reason = new Error("stop waiting");
    const aborted = latch.wait({ signal: stop.signal });
    stop.abort(reason);
    await assert.rejects(aborted, (e: unknown) => e === reason);
    const pending = assert.rejects(latch.wait(), ClosedError);
    await locks.close();
    await pending;
    await assert.rejects(latch.countDown(), ClosedError);
  });

  it("quorum mode: a latch over 3 nodes counts and opens with one node stopped", async () => {
    const nodes = await startPrimaries(3);
    h.onCleanup(() => Promise.all(nodes.map((n) => n.stop())));
    const clients = [...nodes, ...nodes].map((n) => fastClient(n.port));
    h.onCleanup(() => { for (const c of clients) c.disconnect(); });
    await Promise.all(clients.map((c) => ready(c)));
    const a = new Surelock({ redis: clients.slice(0, 3) });
    const b = new Surelock({ redis: clients.slice(3) });
    h.onCleanup(() => a.close());
    h.onCleanup(() => b.close());
    const waiting = b.latch("q", { count: 2 }).wait({ timeout: 10_000 });
    assert.equal(await a.latch("q", { count: 2 }).countDown(), 1);
    await nodes[2]!.pause();
    try {
      assert.equal(await a.latch("q", { count: 2 }).countDown(), 0);
      await within(5_000, waiting, "the quorum wait to open");
      assert.equal(await a.latch("q", { count: 2 }).count(), 0);
    } finally {
      await nodes[2]!.resume();
    }
    for (const n of nodes) await assertEveryKeyExpires(n);
  });
});
