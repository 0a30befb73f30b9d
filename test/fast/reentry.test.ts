/**
 * Reentrancy on a virtual clock: it follows a live section, not a name. Inside a `withLock`
 * section the same lock re-enters the section's one hold (same fencing token, one more entry in
 * Redis); a flow outside it waits like anyone else; and a flow started inside the section that runs
 * after the section ended (a promise continuation, a timer, an async function) acquires afresh or
 * waits: it never re-enters the hold that ended.
 */
import assert from "node:assert/strict";
import { AsyncResource } from "node:async_hooks";
import { afterEach, beforeEach, describe, it } from "node:test";
import { LockLostError, type Lease } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World, later, type Proc } from "./support.js";

/** The entries (`@<entry>` fields) of the mutex `key`'s hold in Redis. */
/** The hold's entries in Redis: its founding entry (the hold's id, unless marked '0') and one `@<entry>` per re-entry. */
async function entries(w: World, key: string): Promise<number> {
  const { fields } = await w.lock(key);
  const founding = fields.h !== undefined && fields[`@${fields.h}`] !== "0" ? 1 : 0;
  return founding + Object.entries(fields).filter(([f, v]) => f.startsWith("@") && f !== `@${fields.h}` && v !== "0").length;
}

describe("fast: re-entry", () => {
  let w: World;
  let p: Proc;
  beforeEach(async () => { w = await World.create(); p = w.proc(); });
  afterEach(async () => { await w.close(); });

  it("re-enters a nested withLock, acquire and sibling flows of the same section: one hold in Redis, one fencing token", async () => {
    await p.locks.withLock("k", async (outer) => {
      const hold = (await w.lock("k")).fields.h;
      await p.locks.withLock("k", async (inner) => {
        assert.equal(inner.fencingToken, outer.fencingToken);
        assert.equal(inner.owner, outer.owner);
        const [a, b] = await Promise.all([p.locks.mutex("k").acquire(), p.locks.mutex("k").acquire()]);
        assert.equal(a.fencingToken, outer.fencingToken);
        assert.equal(b.fencingToken, outer.fencingToken);
        const state = await w.lock("k");
        assert.equal(state.fields.h, hold, "the same hold");
        assert.equal(state.fields.n, "4");
        assert.equal(await entries(w, "k"), 4);
        await Promise.all([a.release(), b.release()]);
      });
      assert.equal((await w.lock("k")).fields.n, "1", "the nested entries are given back");
      assert.equal(outer.held, true);
    });
    assert.equal((await w.lock("k")).fields.o, undefined, "freed at the outermost exit");
    assert.deepEqual(await w.queue("k"), [], "nobody ever queued");
    assert.equal(p.wire.calls("acquire").length, 4, "one script call per entry");
  });

  it("does not re-enter from a flow outside the section: it waits, and gets a new hold with a larger token once the section ends", async () => {
    const end = later();
    let sectionToken = 0n;
    const section = w.track(p.locks.withLock("k", async (lease) => {
      sectionToken = lease.fencingToken;
      await end.promise;
    }));
    await w.clock.settle();
    assert.equal(await p.locks.mutex("k").tryAcquire(), null);
    const outside = w.track(p.locks.mutex("k").acquire());
    await w.to(2_000);
    assert.equal(outside.settled, false, "waits while the section runs");
    end.resolve();
    await w.clock.settle();
    assert.ok(section.ok);
    assert.equal(outside.at, 2_000, "served by the section's release");
    assert.ok((outside.value as Lease).fencingToken > sectionToken);
    await (outside.value as Lease).release();
  });

  /** Ways a flow started inside a section can run after it: each calls `run` after the test calls `fire`. */
  const carriers: [string, (run: () => void, w: World) => { fire: () => Promise<void> }][] = [
    ["a promise continuation", (run, world) => {
      const l = later();
      void l.promise.then(run);
      return { fire: async () => { l.resolve(); await world.clock.settle(); } };
    }],
    ["an async function that awaits past the section", (run, world) => {
      const l = later();
      void (async () => { await l.promise; run(); })();
      return { fire: async () => { l.resolve(); await world.clock.settle(); } };
    }],
    ["a timer carrying the section's async context (AsyncResource.bind, as Node's timers do)", (run, world) => {
      world.clock.setTimeout(AsyncResource.bind(run), 100);
      return { fire: () => world.to(world.now + 100) };
    }],
  ];
  for (const [carrier, start] of carriers) {
    it(`acquires afresh, never re-entering the ended hold, from ${carrier} started inside a section that ran after it`, async () => {
      let late: { tried: Promise<Lease | null>; acquired: Promise<Lease> } | undefined;
      let fire!: () => Promise<void>;
      let sectionToken = 0n;
      await p.locks.withLock("k", (lease) => {
        sectionToken = lease.fencingToken;
        ({ fire } = start(() => {
          const tried = p.locks.mutex("k").tryAcquire();
          late = { tried, acquired: tried.then(() => p.locks.mutex("k").acquire()) };
        }, w));
      });
      // After the section: another process holds the lock when the late flow runs.
      const other = await w.proc().locks.mutex("k").acquire();
      await fire();
      assert.ok(late, "the late flow ran");
      const tried = w.track(late.tried);
      const acquired = w.track(late.acquired);
      await w.clock.settle();
      assert.ok(tried.ok, `tryAcquire settles without error (${String(tried.error)})`);
      assert.equal(tried.value, null, "it does not re-enter: the lock is someone else's");
      assert.equal(acquired.settled, false, "it waits like anyone else");
      await other.release();
      await w.clock.settle();
      const lease = acquired.value as Lease;
      assert.ok(lease.fencingToken > other.fencingToken && other.fencingToken > sectionToken);
      assert.equal((await w.lock("k")).fields.n ?? "1", "1", "a hold of its own");
      await lease.release();
    });
  }

  it("rejects a re-entry into a section whose lease was lost, and the section with LockLostError", async () => {
    const inside = later();
    let nested: Promise<unknown> | undefined;
    const section = w.track(p.locks.withLock("k", async () => {
      await inside.promise;
      nested = p.locks.withLock("k", () => "never runs");
      await nested.catch(() => {});
    }));
    await w.clock.settle();
    const gate = new Gate();
    p.wire.fault = (s) => (s.script === "keepalive" ? { kind: "gate", gate, stage: "execution" } : undefined);
    await w.to(3_000 - 32);
    inside.resolve();
    await w.clock.settle();
    assert.ok(nested);
    await assert.rejects(nested, LockLostError);
    assert.ok(section.error instanceof LockLostError, "the section reports the loss");
    assert.equal(p.wire.calls("acquire").length, 1, "the re-entry sent nothing");
    gate.open();
  });
});
