import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { after, afterEach, before, describe, it } from "node:test";
import { LockTimeoutError } from "../../src/index.js";
import { assertEveryKeyExpires, commandCalls, eventually, Harness, startsWaiting, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";

describe("the waiting room", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertEveryKeyExpires(server); await server.command("FLUSHALL"); });
  after(() => server.stop());
  const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

  it("waiters are woken by the release itself, not by polling (safety poll set to a minute)", async () => {
    const locks = h.locks({ pollInterval: 60_000 });
    let sections = 0;
    await within(20_000, Promise.all(Array.from({ length: 10 }, async () => {
      for (let i = 0; i < 50; i++) await locks.withLock("handoff", async () => { sections++; });
    })));
    assert.equal(sections, 500);
  });

  it("5,000 concurrent waiters in one process each get the lock exactly once, at a few commands per handoff", { timeout: 120_000 }, async () => {
    const locks = h.locks();
    await server.command("CONFIG", "RESETSTAT");
    const got = new Set<number>();
    await within(90_000, Promise.all(Array.from({ length: 5_000 }, (_, i) => locks.withLock("crowd", async () => {
      assert.ok(!got.has(i));
      got.add(i);
    }))));
    assert.equal(got.size, 5_000);
    const scripts = (await commandCalls(server, "evalsha")) + (await commandCalls(server, "eval"));
    const publishes = await commandCalls(server, "publish");
    console.log(`# 5,000 waiters: ${(scripts / 5_000).toFixed(2)} script calls and ${(publishes / 5_000).toFixed(2)} PUBLISH per handoff`);
    assert.ok(scripts / 5_000 <= 4, `${(scripts / 5_000).toFixed(2)} script calls per handoff`);
  });

  it("1,000 waiters across 4 processes all get the lock exactly once, the count is exact", { timeout: 120_000 }, async () => {
    const runs = Array.from({ length: 4 }, () => runFixture("many-waiters", [server.port, "crowd4", 250]).done);
    const results = await within(90_000, Promise.all(runs));
    for (const r of results) assert.equal(r.stdout.trim(), "250", r.stderr);
    assert.equal(await server.command("GET", "test:{crowd4}:count"), "1000");
  });

  it("a lost wake-up (subscriber connection killed) still gets the lock within the safety poll", async () => {
    const locks = h.locks({ pollInterval: 300 });
    const holder = await h.locks().mutex("lost-wakeup").acquire();
    const waiter = locks.mutex("lost-wakeup").acquire({ timeout: 10_000 });
    await eventually(async () => Number(((await server.command("PUBSUB", "NUMSUB", "surelock:{lost-wakeup}:wake")) as [string, number])[1]) > 0, 3_000, "subscribed");
    await server.command("CLIENT", "KILL", "TYPE", "pubsub");
    await holder.release(); // its announcement may reach no one
    const lease = await within(3_000, waiter, "the waiter");
    await lease.release();
  });

  it("timeout: LockTimeoutError carries the wait; nothing is left behind after 1,000 timed-out waits", async () => {
    const locks = h.locks();
    const holder = await h.locks().mutex("busy").acquire();
    const timersBefore = timers();
    const error = await locks.mutex("busy").acquire({ timeout: 50 }).catch((e: unknown) => e);
    assert.ok(error instanceof LockTimeoutError);
    assert.equal(error.code, "ERR_SURELOCK_TIMEOUT");
    assert.ok(error.waitedMs >= 50, `waited ${error.waitedMs}`);
    const results = await Promise.allSettled(Array.from({ length: 1_000 }, () => locks.mutex("busy").acquire({ timeout: 20 })));
    assert.ok(results.every((r) => r.status === "rejected" && r.reason instanceof LockTimeoutError));
    await eventually(async () => Number(((await server.command("PUBSUB", "NUMSUB", "surelock:{busy}:wake")) as [string, number])[1]) === 0, 3_000, "unsubscribed");
    assert.ok(timers() <= timersBefore + 1, `timers: ${timersBefore} before, ${timers()} after`);
    await holder.release();
  });

  it("abort: rejects with the signal's reason unchanged, and leaves no fair-queue ticket behind", async () => {
    const locks = h.locks();
    const holder = await h.locks().mutex("abort", { fair: true }).acquire();
    const controllers = Array.from({ length: 1_000 }, () => new AbortController());
    const waits = controllers.map((c) => locks.mutex("abort", { fair: true }).acquire({ signal: c.signal }));
    await eventually(async () => Number(await server.command("LLEN", "surelock:{abort}:queue")) === 1_000, 20_000, "all queued");
    const reason = new Error("user gave up");
    for (const c of controllers) c.abort(reason);
    const results = await Promise.allSettled(waits);
    assert.ok(results.every((r) => r.status === "rejected" && r.reason === reason));
    await eventually(async () => Number(await server.command("LLEN", "surelock:{abort}:queue")) === 0, 5_000, "queue empty");
    assert.equal(await server.command("HLEN", "surelock:{abort}:tickets"), 0);
    await holder.release();
  });

  it("an already-aborted signal rejects at once without touching Redis", async () => {
    const locks = h.locks();
    const reason = new Error("no");
    await assert.rejects(locks.mutex("pre").acquire({ signal: AbortSignal.abort(reason) }), (e: unknown) => e === reason);
  });

  it("timeout 0 and tryAcquire are one attempt that leaves no ticket in the queue", async () => {
    const holder = await h.locks().mutex("once").acquire();
    await server.command("CONFIG", "RESETSTAT");
    await assert.rejects(h.locks().mutex("once").acquire({ timeout: 0 }), LockTimeoutError);
    assert.equal(await h.locks().mutex("once").tryAcquire(), null);
    assert.equal(await commandCalls(server, "evalsha"), 2, "one script call each");
    assert.equal(await server.command("EXISTS", "surelock:{once}:queue"), 0);
    await holder.release();
  });

  it("close() rejects pending acquires with ClosedError and releases held leases", async () => {
    const locks = h.locks();
    const other = h.locks();
    const held = await other.mutex("closing").acquire();
    const lease = await locks.mutex("mine").acquire();
    const later = locks.mutex("later");
    const waiting = startsWaiting("closing");
    const pending = locks.mutex("closing").acquire().catch((e: unknown) => e);
    await waiting;
    await locks.close();
    assert.equal(((await pending) as { code?: string }).code, "ERR_SURELOCK_CLOSED");
    assert.equal(lease.signal.aborted, true);
    assert.equal(await server.command("HEXISTS", "surelock:{mine}:lock", "o"), 0);
    await assert.rejects(later.acquire(), { code: "ERR_SURELOCK_CLOSED" });
    assert.throws(() => locks.mutex("x"), { code: "ERR_SURELOCK_CLOSED" });
    await locks.close(); // idempotent
    await held.release();
  });

  it("publishes wait events with how it ended", async () => {
    const events: unknown[] = [];
    const listener = (m: unknown): void => { events.push(m); };
    diagnostics.subscribe("surelock:wait", listener);
    try {
      const holder = await h.locks().mutex("events").acquire();
      await h.locks().mutex("events").acquire({ timeout: 30 }).catch(() => {});
      await holder.release();
    } finally {
      diagnostics.unsubscribe("surelock:wait", listener);
    }
    assert.deepEqual(events.map((e) => (e as { phase: string; outcome?: string }).outcome ?? "start"), ["start", "timeout"]);
  });
});

describe("fair mode", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("20 workers in 4 processes acquire in the order they arrived", { timeout: 120_000 }, async () => {
    const hold = 20;
    const procs = Array.from({ length: 4 }, () => runFixture("fair-worker", [server.port, "fair", 5, hold], true));
    await Promise.all(procs.map((p) => new Promise<void>((resolve) => p.lines((l) => { if (l === "ready") resolve(); }))));
    const done = new Map<string, number>();
    for (const p of procs) p.lines((l) => { const [w, id, at] = l.split(" "); if (w === "done") done.set(id!, Number(at)); });
    // A holder keeps the lock while the queue forms, one arrival at a time.
    const h = new Harness(server);
    const holder = await h.locks().mutex("fair", { fair: true }).acquire();
    const arrival: string[] = [];
    for (let i = 0; i < 20; i++) {
      const id = `w${i}`;
      procs[i % 4]!.child.stdin?.write(`go ${id}\n`);
      arrival.push(id);
      await eventually(async () => Number(await server.command("LLEN", "surelock:{fair}:queue")) === i + 1, 5_000, `${id} queued`);
    }
    const releasedAt = performance.timeOrigin + performance.now();
    await holder.release();
    await eventually(() => done.size === 20, 30_000, "all served");
    assert.deepEqual(await server.command("LRANGE", "test:{fair}:order", 0, -1), arrival);
    // Nobody waits longer than those ahead of it hold the lock, plus handoffs and slack.
    arrival.forEach((id, ahead) => {
      const waited = done.get(id)! - releasedAt;
      assert.ok(waited <= (ahead + 1) * (hold + 30) + 1_000, `${id}, ${ahead} ahead, got the lock ${waited.toFixed(0)} ms after the release`);
    });
    for (const p of procs) p.child.stdin?.write("quit\n");
    await Promise.all(procs.map((p) => p.done));
    await h.cleanup();
    await assertEveryKeyExpires(server);
  });
});
