/**
 * The exactly-once protocol against real redis-servers, one scenario per way mutual exclusion
 * broke in 0.1 (issue 13): a flow that outlives its section, extend() racing the watchdog, a
 * replayed release (the reply lost after Redis ran it, the client resending it, with ioredis'
 * resend on and off), replayed acquires and guarded writes, extend() of a lease lost on the wire.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { ConnectionError, LockLostError, Surelock } from "../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { namesOf } from "../helpers/script-catalog.js";
import { scripts } from "../../src/protocol/index.js";
import { assertEveryKeyExpires, eventually, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

describe("the exactly-once protocol on a real server", () => {
  let server: RedisServer;
  let proxy: FaultProxy | undefined;
  const closers: (() => Promise<unknown> | void)[] = [];
  before(async () => { server = await startStandalone(); });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await proxy?.close();
    proxy = undefined;
    await assertEveryKeyExpires(server);
    await server.command("FLUSHALL");
  });
  after(() => server.stop());

  /** A client through the fault proxy (resend on or off) and a Surelock over it. */
  async function through(o: { autoResend: boolean; ttl?: number; commandTimeout?: number }): Promise<{ locks: Surelock; redis: Redis; proxy: FaultProxy }> {
    proxy ??= await startFaultProxy(server, { name: "p", framing: "resp" });
    const redis = new Redis({ host: proxy.host, port: proxy.port, autoResendUnfulfilledCommands: o.autoResend, retryStrategy: () => 20, maxRetriesPerRequest: 5 });
    redis.on("error", () => {});
    const locks = new Surelock({ redis, ttl: o.ttl ?? 10_000, commandTimeout: o.commandTimeout ?? 2_000 });
    closers.push(() => redis.disconnect(), () => locks.close());
    return { locks, redis, proxy };
  }

  /** A Surelock straight to the server: "another process". */
  function direct(ttl = 10_000): Surelock {
    const redis = new Redis({ port: server.port, host: server.host });
    const locks = new Surelock({ redis, ttl });
    closers.push(() => redis.disconnect(), () => locks.close());
    return locks;
  }

  /** The hold's entry count: its `n`, which a hold of one entry does not write (1); null when nothing holds the lock. */
  const entries = async (key: string): Promise<string | null> => {
    const [h, n] = (await server.command("HMGET", `surelock:{${key}}:lock`, "h", "n")) as (string | null)[];
    return h === null || h === undefined ? null : (n ?? "1");
  };

  it("flows started inside a section that run after it acquire as themselves: they exclude each other and everyone else", async () => {
    const locks = direct();
    const other = direct();
    let go!: () => void;
    const after = new Promise<void>((resolve) => { go = resolve; });
    let inside = 0;
    let most = 0;
    const tokens: bigint[] = [];
    const job = async (): Promise<void> => {
      await after;
      await locks.withLock("outlived", async (lease) => {
        tokens.push(lease.fencingToken);
        inside++;
        most = Math.max(most, inside);
        await new Promise((resolve) => setTimeout(resolve, 20));
        inside--;
      });
    };
    let jobs: Promise<void>[] = [];
    const sectionToken = await locks.withLock("outlived", async (lease) => {
      // Timers set in the section, firing after it released: they carry the dead section along.
      jobs = [job(), job()];
      return lease.fencingToken;
    });
    go();
    const intruder = other.withLock("outlived", async () => {
      inside++;
      most = Math.max(most, inside);
      inside--;
    });
    await within(5_000, Promise.all([...jobs, intruder]));
    assert.equal(most, 1, "never two holders at once");
    assert.equal(tokens.length, 2);
    for (const token of tokens) assert.ok(token > sectionToken, "each job founded a hold of its own");
    assert.notEqual(tokens[0], tokens[1]);
  });

  for (const autoResend of [true, false]) {
    it(`a replayed release of a re-entered lock gives back one entry only (ioredis resend ${autoResend ? "on" : "off"})`, async () => {
      const { locks, proxy } = await through({ autoResend });
      const intruder = direct();
      await locks.withLock(`replay-${autoResend}`, async () => {
        const inner = await locks.mutex(`replay-${autoResend}`).acquire();
        assert.equal(await entries(`replay-${autoResend}`), "2");
        const cut = proxy.cutReply({ scripts: namesOf("release-like") }, 5_000);
        const released = inner.release();
        assert.ok(await cut, "the release was cut after Redis ran it");
        if (autoResend) await within(5_000, released);
        else await assert.rejects(within(5_000, released), ConnectionError);
        assert.equal(await entries(`replay-${autoResend}`), "1", "the outer entry is still there");
        assert.equal(await intruder.mutex(`replay-${autoResend}`).tryAcquire(), null, "and still excludes everyone else");
      });
      assert.equal(await server.command("HEXISTS", `surelock:{replay-${autoResend}}:lock`, "o"), 0, "freed at the last release");
    });
  }

  it("a replayed final release answers released: no LockLostError for a lease that was given back", async () => {
    const { locks, proxy } = await through({ autoResend: true });
    const lease = await locks.mutex("final").acquire();
    const cut = proxy.cutReply({ scripts: namesOf("release-like") }, 5_000);
    await within(5_000, lease.release());
    assert.ok(await cut);
    assert.equal(lease.signal.aborted, false);
  });

  for (const autoResend of [true, false]) {
    it(`a release that grants to a waiter of its own instance, its reply lost, still serves that waiter, and only it (ioredis resend ${autoResend ? "on" : "off"})`, async () => {
      // Such a grant is not announced (the reply hands it over): the waiter learns of it from its
      // ticket's refresh instead.
      const key = `own-waiter-${autoResend}`;
      const { locks, proxy } = await through({ autoResend });
      const intruder = direct();
      const spy = new Redis({ port: server.port, host: server.host });
      closers.push(() => spy.disconnect());
      const told: string[] = [];
      spy.on("pmessage", (_pattern: string, _channel: string, message: string) => told.push(message));
      await spy.psubscribe(`surelock:{${key}}:wake*`);
      const lease = await locks.mutex(key).acquire();
      const waiting = locks.mutex(key).acquire();
      await eventually(async () => (await server.command("LLEN", `surelock:{${key}}:queue`)) === 1, 5_000, "the waiter queued");
      const cut = proxy.cutReply({ scripts: namesOf("release-like") }, 5_000);
      const released = lease.release();
      assert.ok(await cut, "the release was cut after Redis ran it");
      if (autoResend) await within(5_000, released);
      else await assert.rejects(within(5_000, released), ConnectionError);
      assert.equal(await intruder.mutex(key).tryAcquire(), null, "the lock went to the waiter, nobody else");
      const next = await within(5_000, waiting);
      assert.equal(next.fencingToken, lease.fencingToken + 1n, "the waiter holds the very grant the release made");
      assert.equal(next.signal.aborted, false);
      await next.release();
      await spy.ping();
      assert.deepEqual(told, [], "the grant was never announced");
    });
  }

  it("a re-entry answered after its section's hold was lost is refused, and what it added is given back (torture seed 34)", async () => {
    // Commands still run at once, their replies come late: the watchdog's renewals go unconfirmed,
    // so the section's lease is lost while the nested acquire's answer ("entered") is on its way.
    const key = "late-reentry";
    const { locks, proxy } = await through({ autoResend: true, ttl: 600, commandTimeout: 5_000 });
    let nested: Promise<unknown> | undefined;
    const section = locks.withLock(key, async (lease) => {
      proxy.setLatency(0, 1_200);
      nested = locks.mutex(key).acquire();
      nested.catch(() => {});
      await eventually(async () => (await entries(key)) === "2", 2_000, "the re-entry ran on the server");
      await new Promise((resolve) => lease.signal.addEventListener("abort", resolve, { once: true }));
    });
    await assert.rejects(within(5_000, section), LockLostError);
    await assert.rejects(within(5_000, nested!), LockLostError, "no lease on a hold its section lost");
    proxy.setLatency(0, 0);
    await eventually(async () => (await server.command("HEXISTS", `surelock:{${key}}:lock`, "o")) === 0, 3_000, "both entries given back");
  });

  it("a nested read answered after its writer's hold was lost is refused, and its read hold given back", async () => {
    const key = "late-nested-read";
    const { locks, proxy } = await through({ autoResend: true, ttl: 600, commandTimeout: 5_000 });
    const rw = locks.readWriteLock(key);
    const holders = `surelock:rw:{${key}}:holders`;
    let nested: Promise<unknown> | undefined;
    const section = rw.write().withLock(async (lease) => {
      proxy.setLatency(0, 1_200);
      nested = rw.read().acquire();
      nested.catch(() => {});
      await eventually(async () => (await server.command("ZCOUNT", holders, "(0", "+inf")) === 2, 2_000, "the nested read ran on the server");
      await new Promise((resolve) => lease.signal.addEventListener("abort", resolve, { once: true }));
    });
    await assert.rejects(within(5_000, section), LockLostError);
    await assert.rejects(within(5_000, nested!), LockLostError, "no read lease under a writer its section lost");
    proxy.setLatency(0, 0);
    await eventually(async () => (await server.command("ZCOUNT", holders, "(0", "+inf")) === 0, 3_000, "the writer's and the read's holds given back");
  });

  it("a nested read given up while its answer is on the wire gives back the read hold it founded", async () => {
    const key = "abandoned-nested-read";
    const { locks, proxy } = await through({ autoResend: true });
    const rw = locks.readWriteLock(key);
    const holders = `surelock:rw:{${key}}:holders`;
    await rw.write().withLock(async () => {
      proxy.setLatency(0, 1_000);
      const stop = new AbortController();
      const nested = rw.read().acquire({ signal: stop.signal });
      await eventually(async () => (await server.command("ZCOUNT", holders, "(0", "+inf")) === 2, 2_000, "the nested read ran on the server");
      stop.abort(new Error("given up"));
      await assert.rejects(within(2_000, nested), /given up/);
      await eventually(async () => (await server.command("ZCOUNT", holders, "(0", "+inf")) === 1, 3_000, "the read hold given back, long before its ttl");
      proxy.setLatency(0, 0);
    });
  });

  it("a waiter that gives up after the lock was granted to it leaves the hold to those who entered it by owner meanwhile (torture seed 309 on Cluster)", async () => {
    const key = "granted-then-joined";
    const { locks: x, proxy } = await through({ autoResend: true });
    const holder = direct();
    const sharer = direct();
    const intruder = direct();
    const first = await holder.mutex(key).acquire();
    const stop = new AbortController();
    const waiting = x.mutex(key).acquire({ owner: "job", signal: stop.signal });
    waiting.catch(() => {});
    await eventually(async () => (await server.command("LLEN", `surelock:{${key}}:queue`)) === 1, 5_000, "x queued");
    // x hears nothing from now on (replies and wake-ups come late); its commands still run at once.
    proxy.setLatency(0, 2_000);
    await first.release();
    assert.equal(await server.command("HGET", `surelock:{${key}}:lock`, "o"), "job", "granted to x's ticket, owner job");
    const joined = await within(2_000, sharer.mutex(key).acquire({ owner: "job" }));
    assert.equal(await entries(key), "2", "the sharer entered the granted hold by owner");
    stop.abort(new Error("x gives up"));
    await assert.rejects(within(2_000, waiting), /x gives up/);
    // (Its script may first meet NOSCRIPT, whose answer comes late too.)
    await eventually(async () => (await entries(key)) === "1", 6_000, "x's founding entry given back");
    assert.equal(await intruder.mutex(key).tryAcquire(), null, "the hold is the sharer's still");
    assert.equal(await joined.isHeld(), true);
    proxy.setLatency(0, 0);
    await joined.release();
  });

  it("a replayed acquire with an explicit owner counts one entry; a replayed semaphore acquire takes one permit", async () => {
    const { locks, proxy } = await through({ autoResend: true });
    const cut = proxy.cutReply({ scripts: namesOf("acquire-like") }, 5_000);
    const lease = await within(5_000, locks.mutex("owned").acquire({ owner: "job-17" }));
    assert.ok(await cut);
    assert.equal(await entries("owned"), "1");
    await lease.release();
    const sem = locks.semaphore("permits", { permits: 2 });
    const cut2 = proxy.cutReply({ scripts: namesOf("acquire-like") }, 5_000);
    const permit = await within(5_000, sem.acquire({ timeout: 3_000 }));
    assert.ok(await cut2);
    assert.equal(Number(await server.command("ZCOUNT", "surelock:sem:{permits}:holders", "(0", "+inf")), 1, "one permit taken, not two");
    const second = await sem.tryAcquire();
    assert.ok(second, "the second permit is free");
    await Promise.all([permit.release(), second.release()]);
  });

  it("a replayed acquire of 3 permits takes 3, not 6; a resent setPermits() resolves, applied once", async () => {
    const { locks, proxy } = await through({ autoResend: true });
    const sem = locks.semaphore("counted", { permits: 4 });
    const cut = proxy.cutReply({ scripts: namesOf("acquire-like") }, 5_000);
    const three = await within(5_000, sem.acquire({ permits: 3, timeout: 3_000 }));
    assert.ok(await cut);
    assert.equal(three.permits, 3);
    assert.equal(await server.command("HGET", "surelock:sem:{counted}:state", "u"), "3", "three permits in use, not six");
    const one = await sem.tryAcquire();
    assert.ok(one, "the fourth permit is free");
    // A change whose reply was lost, sent again by the client: it resolves (the replay answers "set
    // before") and the limit is the one asked for.
    const cut2 = proxy.cutReply({ scripts: new Set(["set-permits"]) }, 5_000);
    await within(5_000, sem.setPermits(6));
    assert.ok(await cut2);
    assert.equal(await server.command("HGET", "surelock:sem:{counted}:state", "p"), "6");
    await Promise.all([three.release(), one.release()]);
    assert.equal(await server.command("HGET", "surelock:sem:{counted}:state", "u"), "0");
  });

  it("a replayed guarded DECRBY is applied once", async () => {
    const { locks, proxy } = await through({ autoResend: true });
    await server.command("SET", "{stock:1}:units", "10");
    const guard = locks.guard("stock:1");
    await locks.withLock("stock:1", async (lease) => {
      const cut = proxy.cutReply({ scripts: namesOf("fence-like") }, 5_000);
      const outcome = await within(5_000, guard.write(lease.fencingToken, "DECRBY", "{stock:1}:units", 3));
      assert.ok(await cut);
      assert.deepEqual(outcome, { written: true, reply: 7 });
    });
    assert.equal(await server.command("GET", "{stock:1}:units"), "7");
  });

  it("two writes through one guard just after a NOSCRIPT are both applied, once each (issue 24)", async () => {
    const { locks, proxy } = await through({ autoResend: true });
    const guard = locks.guard("order:1");
    await locks.withLock("order:1", async (lease) => {
      await server.command("SCRIPT", "FLUSH");
      const noscripts = async (): Promise<number> =>
        Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(String(await server.command("INFO", "errorstats")))?.[1] ?? 0);
      const before = await noscripts();
      // Replies come late: the first write's NOSCRIPT (and so its EVAL) is still on its way when the
      // second write's EVALSHA runs, after another client loaded the script.
      proxy.setLatency(0, 300);
      const first = guard.write(lease.fencingToken, "RPUSH", "{order:1}:log", "first");
      await eventually(async () => (await noscripts()) > before, 5_000, "the first write's NOSCRIPT");
      await server.command("SCRIPT", "LOAD", scripts.guardWrite.lua);
      const second = guard.write(lease.fencingToken, "RPUSH", "{order:1}:log", "second");
      const outcomes = await within(5_000, Promise.all([first, second]));
      proxy.setLatency(0, 0);
      assert.deepEqual(outcomes.map((o) => o.written), [true, true], JSON.stringify(outcomes, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)));
    });
    assert.deepEqual(((await server.command("LRANGE", "{order:1}:log", 0, -1)) as string[]).slice().sort(), ["first", "second"]);
  });

  it("extend() racing the watchdog over a slow link: the client never trusts a lease longer than Redis keeps it", async () => {
    const { locks, proxy } = await through({ autoResend: true, ttl: 600 });
    proxy.setLatency(20, 20);
    const lease = await locks.mutex("raced").acquire();
    const hold = lease._hold;
    let worst = -Infinity;
    let extendedTimes = 0;
    const check = async (): Promise<void> => {
      const pttl = Number(await server.command("PTTL", "surelock:{raced}:lock"));
      const trusted = hold.validUntilAt - performance.now();
      // Sampled straight from the server, after the client's view: the server's expiry is later.
      if (lease.held) worst = Math.max(worst, trusted - pttl);
    };
    for (let i = 0; i < 24 && lease.held; i++) {
      // Extend to long and back to short while the watchdog renews every 200 ms.
      const extended = lease.extend(i % 2 === 0 ? 60_000 : 600).then(() => true, (e: unknown) => {
        assert.ok(e instanceof LockLostError, String(e));
        return false;
      });
      await new Promise((resolve) => setTimeout(resolve, 7 * (i % 5)));
      await check();
      if (await extended) extendedTimes++;
      await check();
    }
    assert.ok(worst <= 0, `the client trusted the lease ${worst.toFixed(1)} ms longer than Redis kept it`);
    // Each extend is confirmed as the newest request: the watchdog does not slip a renewal in
    // behind it, which used to leave every extend's reply able only to shorten the validity,
    // until the lease ran out after about ten extends.
    assert.equal(extendedTimes, 24, `${extendedTimes} of 24 extends confirmed`);
    await lease.release();
  });

  it("extend() of a lease lost while the call was on the wire rejects with LockLostError and gives the lock back", async () => {
    const { locks, proxy } = await through({ autoResend: true, ttl: 400, commandTimeout: 3_000 });
    const lease = await locks.mutex("lost-on-the-wire").acquire();
    proxy.blackhole();
    const extended = lease.extend(60_000);
    await assert.rejects(within(5_000, extended), (e: unknown) => e instanceof LockLostError && e.reason === "unreachable");
    assert.equal(lease.held, false);
    proxy.heal("deliver");
    // The extension reached Redis late and kept the lock for nobody: it is given back.
    await eventually(async () => (await server.command("HEXISTS", "surelock:{lost-on-the-wire}:lock", "o")) === 0, 3_000, "the lock given back");
    await lease.release().catch(() => {});
  });
});
