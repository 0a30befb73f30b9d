import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LockLostError, LockTimeoutError } from "../../src/errors.js";
import { PostgresLocks } from "../../src/postgres/locks.js";
import { fresh, postgresSuite, sleep } from "./support.js";

const aborted = (signal: AbortSignal, ms: number) =>
  new Promise<unknown>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(signal.reason);
    }, { once: true });
  });

describe("PostgreSQL lease life: waiting, watchdog, loss signal", () => {
  const ctx = postgresSuite();
  const mutex = (name: string, hold: string, timeoutMs = 5_000) => ({ names: [name], hold, owner: hold, mode: "x" as const, reentry: { kind: "fresh" as const }, timeoutMs });

  it("the watchdog keeps renewed holds past their ttl with one statement per tick for all of them", async () => {
    const s = ctx.store();
    const locks = new PostgresLocks(s, { ttlMs: 1_500 });
    try {
      const names = [fresh(), fresh(), fresh()];
      const held = await Promise.all(names.map((n, i) => locks.acquire(mutex(n, `h${i}`))));
      const before = { statements: s.statements, ticks: locks.ticks };
      await sleep(3_000);
      for (const h of held) {
        assert.equal(h.signal.aborted, false);
        assert.ok(h.heldUntil() > performance.now());
      }
      const ticks = locks.ticks - before.ticks;
      assert.ok(ticks >= 2, `${ticks} ticks`);
      assert.equal(s.statements - before.statements, ticks, "one renewal statement per tick for three holds");
      for (const [i, n] of names.entries()) assert.equal((await s.check([n], `h${i}`)).live, true);
      for (const h of held) assert.equal((await locks.release(h)).status, "freed");
    } finally {
      locks.close();
    }
  });

  it("a fixed leaseTime is not renewed: the signal aborts with LockLostError(expired) when it runs out, and another holder gets a higher token", async () => {
    const s = ctx.store();
    const locks = new PostgresLocks(s, { ttlMs: 5_000 });
    try {
      const name = fresh();
      const h = await locks.acquire({ ...mutex(name, "fixed"), leaseTimeMs: 200 });
      const reason = await aborted(h.signal, 2_000);
      assert.ok(reason instanceof LockLostError && reason.reason === "expired");
      assert.equal(h.heldUntil(), 0);
      const next = await locks.acquire(mutex(name, "next"));
      assert.ok(next.ref.token > h.ref.token);
      await locks.release(next);
    } finally {
      locks.close();
    }
  });

  it("a hold force-released by an operator is lost at the next tick", async () => {
    const s = ctx.store();
    const locks = new PostgresLocks(s, { ttlMs: 300 });
    try {
      const name = fresh();
      const h = await locks.acquire(mutex(name, "victim"));
      await s.forceRelease(name);
      const reason = await aborted(h.signal, 2_000);
      assert.ok(reason instanceof LockLostError);
    } finally {
      locks.close();
    }
  });

  it("waiters are served in arrival order; a timeout rejects with LockTimeoutError and leaves no ticket; an abort rejects with its reason", async () => {
    const s = ctx.store({ pollMs: 300 });
    const locks = new PostgresLocks(s, { ttlMs: 5_000 });
    try {
      const name = fresh();
      const first = await locks.acquire(mutex(name, "first"));
      const order: string[] = [];
      const waiters: Promise<void>[] = [];
      for (const w of ["a", "b", "c"]) {
        waiters.push(locks.acquire(mutex(name, w)).then(async (h) => {
          order.push(w);
          await sleep(20);
          await locks.release(h);
        }));
        // Each has its ticket before the next one asks: that is what arrival order means.
        for (let i = 0; i < 200 && !(await s.inspect(name)).tickets.some((t) => t.ticket === w); i++) await sleep(10);
      }
      const t0 = performance.now();
      await assert.rejects(locks.acquire(mutex(name, "impatient", 300)), (e: unknown) => e instanceof LockTimeoutError && e.timeoutMs === 300);
      assert.ok(performance.now() - t0 < 1_500);
      const controller = new AbortController();
      const cancelled = locks.acquire({ ...mutex(name, "cancelled"), signal: controller.signal });
      await sleep(50);
      controller.abort(new Error("user gave up"));
      await assert.rejects(cancelled, /user gave up/);
      assert.deepEqual((await s.inspect(name)).tickets.map((t) => t.ticket), ["a", "b", "c"]);
      await locks.release(first);
      await Promise.all(waiters);
      assert.deepEqual(order, ["a", "b", "c"]);
    } finally {
      locks.close();
    }
  });

  it("re-entry by hold, extend (also shorter), and a re-entry of a released hold is refused", async () => {
    const s = ctx.store();
    const locks = new PostgresLocks(s, { ttlMs: 5_000 });
    try {
      const name = fresh();
      const outer = await locks.acquire(mutex(name, "outer"));
      const inner = await locks.acquire({ ...mutex(name, "inner-id"), reentry: { kind: "hold", hold: "outer" }, entry: "e2" });
      assert.equal(inner.status, "entered");
      assert.equal(inner.ref.token, outer.ref.token);
      const t0 = performance.now();
      const until = await locks.extend(outer, 100);
      assert.ok(until <= t0 + 100 && until > t0, "a shorter extend shortens the validity");
      await locks.extend(outer, 5_000);
      assert.equal((await locks.release(inner, "e2")).status, "held");
      assert.equal((await locks.release(outer)).status, "freed");
      await assert.rejects(locks.acquire({ ...mutex(name, "late"), reentry: { kind: "hold", hold: "outer" }, entry: "e3" }), LockLostError);
    } finally {
      locks.close();
    }
  });
});
