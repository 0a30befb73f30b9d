/**
 * Fixed leases (`acquire({ leaseTime })`, Redisson's leaseTime, redis-semaphore's refreshInterval: 0):
 * a lease the watchdog never renews, which ends by itself at the end of its validity.
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { describe, it } from "node:test";
import type { Redis } from "ioredis";
import { LockLostError, type LostMessage } from "../../src/index.js";
import { scripts } from "../../src/protocol/index.js";
import { aborted, eventually, Harness, quietFor, standaloneSuite, startsWaiting, within } from "../helpers/fixtures.js";
import type { RedisServer } from "../helpers/redis-topology.js";

/** Script calls seen on the wire (MONITOR), by script name. */
async function monitor(h: Harness): Promise<{ calls(name: string): number; stop(): void }> {
  const names = new Map(Object.values(scripts).map((s) => [s.sha, s.name]));
  const seen: string[] = [];
  const m = await (h.client() as Redis).monitor();
  m.on("monitor", (_time: string, args: string[]) => {
    if (args[0]?.toUpperCase() === "EVALSHA") seen.push(names.get(args[1] ?? "") ?? "?");
  });
  return { calls: (name) => seen.filter((s) => s === name).length, stop: () => m.disconnect() };
}

/** When the lease of `key` became unsafe, by its surelock:lost event (the abort minus its lateness). */
function unsafeAt(key: string): Promise<number> {
  let listener: ((m: unknown) => void) | undefined;
  const seen = new Promise<number>((resolve) => {
    listener = (m) => {
      const lost = m as LostMessage;
      if (lost.key === key) resolve(performance.now() - lost.lateByMs);
    };
    diagnostics.subscribe("surelock:lost", listener);
  });
  return within(5_000, seen, `the loss of ${key}`).finally(() => diagnostics.unsubscribe("surelock:lost", listener!));
}

describe("fixed leases (leaseTime)", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  it("its signal aborts at the end of its validity (reason expired), before the key expires in Redis, which then frees the lock", async () => {
    const locks = h.locks({ ttl: 10_000 });
    const unsafe = unsafeAt("fixed");
    const sentBefore = performance.now();
    const lease = await locks.mutex("fixed").acquire({ leaseTime: 300 });
    const reason = await aborted(lease.signal, 2_000);
    const abortedAfter = performance.now() - sentBefore;
    assert.ok(reason instanceof LockLostError && reason.reason === "expired", String(reason));
    // Validity is 300 ms minus the drift (5 ms) from the acquire's send instant, never cut short;
    // the abort comes when the timer fires, which a busy machine may make late (lateByMs).
    const deadline = (await unsafe) - sentBefore;
    assert.ok(deadline >= 295 && deadline < 300 + 50, `valid until ${deadline.toFixed(1)} ms after the acquire was sent`);
    assert.ok(abortedAfter >= 295 && abortedAfter < 300 + 1_000, `aborted ${abortedAfter.toFixed(0)} ms after`);
    assert.equal(lease.held, false);
    // Nobody renewed it: Redis lets it go by itself, and the next one gets the lock.
    await eventually(async () => (await server.command("EXISTS", "surelock:{fixed}:lock")) === 0
      || (await server.command("HEXISTS", "surelock:{fixed}:lock", "o")) === 0, 1_000, "the key to expire");
    const next = await within(1_000, locks.mutex("fixed").acquire({ timeout: 0 }));
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });

  it("sends no renewal over its whole life, while a renewed lease of the same Surelock does", async () => {
    const wire = await monitor(h);
    h.onCleanup(() => wire.stop());
    // A ttl of 150 ms: a renewed lease is renewed every 50 ms.
    const locks = h.locks({ ttl: 150 });
    const fixed = await locks.mutex("no-renewal").acquire({ leaseTime: 400 });
    await aborted(fixed.signal, 2_000);
    assert.equal(wire.calls("keepalive"), 0, "no keepalive call while only the fixed lease was held");
    const renewed = await locks.mutex("renewed").acquire();
    await eventually(() => wire.calls("keepalive") >= 2, 2_000, "the renewed lease's renewals");
    assert.equal(renewed.held, true);
    await renewed.release();
    await fixed.release().catch(() => {});
  });

  it("release() before its end frees the lock at once, and its signal never aborts", async () => {
    const locks = h.locks();
    const lease = await locks.mutex("early").acquire({ leaseTime: 10_000 });
    const waiting = startsWaiting("early");
    const next = locks.mutex("early").acquire({ timeout: 5_000 });
    await waiting;
    await lease.release();
    const taken = await within(1_000, next, "the waiter served by the release");
    assert.equal(lease.signal.aborted, false);
    assert.equal(lease.held, false);
    await taken.release();
  });

  it("extend(ttl) sets a new fixed end: the lease lasts ttl from the extend, and is still not renewed", async () => {
    const wire = await monitor(h);
    h.onCleanup(() => wire.stop());
    const locks = h.locks({ ttl: 150 });
    const lease = await locks.mutex("extended").acquire({ leaseTime: 200 });
    const unsafe = unsafeAt("extended");
    const extendSent = performance.now();
    await lease.extend(700);
    // Set anew to 700 ms (its first lease had 200 ms at most left).
    const pttl = Number(await server.command("PTTL", "surelock:{extended}:lock"));
    assert.ok(pttl > 300 && pttl <= 700, `PTTL ${pttl} after extend(700)`);
    // Still held past its first end (200 ms), and only the extend's own call went out.
    await quietFor(300);
    assert.equal(lease.held, true);
    await aborted(lease.signal, 3_000);
    const end = (await unsafe) - extendSent;
    assert.ok(end >= 691 && end < 700 + 50, `valid until ${end.toFixed(1)} ms after the extend was sent`);
    assert.equal(wire.calls("keepalive"), 1, "the extend's one call, no renewal");
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });

  it("extend(ttl) shorter than what is left frees the lock in Redis when the lease says so (issue 24)", async () => {
    const locks = h.locks();
    const lease = await locks.mutex("shortened").acquire({ leaseTime: 10_000 });
    await lease.extend(300);
    const pttl = Number(await server.command("PTTL", "surelock:{shortened}:lock"));
    assert.ok(pttl > 0 && pttl <= 300, `PTTL ${pttl} after extend(300) of a 10 s lease`);
    await aborted(lease.signal, 2_000);
    const started = performance.now();
    const next = await within(2_000, h.locks().mutex("shortened").acquire({ timeout: 5_000 }), "the next holder");
    assert.ok(performance.now() - started < 1_000, "the next holder got in right after the shortened lease");
    await next.release();
  });

  it("a shared hold is not shortened by one sharer's extend: a renewing lease joined by owner keeps the key's life", async () => {
    const first = await h.locks().mutex("kept").acquire({ owner: "job", leaseTime: 10_000 });
    const second = await h.locks().mutex("kept").acquire({ owner: "job" });
    await second.extend(300);
    const pttl = Number(await server.command("PTTL", "surelock:{kept}:lock"));
    assert.ok(pttl > 5_000, `the key lives as long as the first sharer was promised (${pttl} ms left)`);
    assert.equal(first.held, true);
    await second.release();
    await first.release();
  });

  it("a fixed lease handed over by a release lasts its whole leaseTime (not what was left of the waiter's ticket)", async () => {
    const locks = h.locks();
    const holder = await locks.mutex("handoff").acquire();
    const waiting = startsWaiting("handoff");
    // Longer than the ticket lease (at most 3 s) a grant is founded with.
    const next = h.locks().mutex("handoff").acquire({ leaseTime: 8_000, timeout: 5_000 });
    await waiting;
    await holder.release();
    const lease = await within(2_000, next, "the granted waiter");
    const validFor = lease._hold.validUntilAt - performance.now();
    const pttl = Number(await server.command("PTTL", "surelock:{handoff}:lock"));
    assert.ok(pttl > 7_000, `PTTL ${pttl} in Redis`);
    assert.ok(validFor > 7_000 && validFor <= 8_000, `valid for ${validFor.toFixed(0)} ms from now`);
    assert.equal(lease._hold.renewing, false);
    await lease.release();
  });
});
