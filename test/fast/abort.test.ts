/**
 * Timeouts, aborts and close() at each await of an acquire, on a virtual clock: the call settles
 * at the exact instant its bound falls (the timeout, the abort, the close), with the documented
 * error, whatever is on the wire; and nothing stays held or queued in Redis afterwards — what an
 * interrupted attempt obtained anyway (a founded hold, a ticket, a grant) is given back.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, it } from "node:test";
import { ClosedError, LockLostError, LockTimeoutError, type Lease } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World, assertCode, later, type Tracked } from "./support.js";

describe("fast: timeout, abort and close", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  /** Fails unless Redis is clean (no hold, no ticket) and `key` is free for another process. */
  async function leftNothing(key: string): Promise<void> {
    assert.deepEqual(await w.traces(), []);
    const next = w.track(w.proc().locks.mutex(key).tryAcquire());
    await w.clock.settle();
    assert.ok(next.value, `${key} is free`);
    await next.value.release();
  }

  it("rejects acquire({ timeout }) with LockTimeoutError at exactly the timeout, its ticket gone from the line", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const waiting = w.track(w.proc().locks.mutex("k").acquire({ timeout: 750 }));
    await w.stepTo(749, () => assert.equal(waiting.settled, false));
    await w.to(750);
    assert.equal(waiting.at, 750);
    assert.ok(waiting.error instanceof LockTimeoutError);
    assert.equal(waiting.error.waitedMs, 750);
    assert.equal(waiting.error.timeoutMs, 750);
    assert.deepEqual(await w.queue("k"), []);
    await holder.release();
    await leftNothing("k");
  });

  it("rejects at the timeout while its first attempt is still unanswered, and gives back the hold that attempt founded", async () => {
    const p = w.proc();
    const gate = new Gate();
    p.wire.fault = (s) => (s.script === "acquire" ? { kind: "gate", gate, stage: "reply" } : undefined);
    const pending = w.track(p.locks.mutex("k").acquire({ timeout: 300 }));
    await gate.reached;
    assert.notEqual((await w.lock("k")).fields.o, undefined, "the attempt founded a hold in Redis");
    await w.to(300);
    assert.equal(pending.at, 300);
    assertCode(pending.error, "ERR_SURELOCK_TIMEOUT");
    gate.open();
    await w.clock.settle();
    await leftNothing("k");
  });

  it("rejects at the caller's timeout when an answer came too late to trust and the next try waits (not a whole timeout later)", async () => {
    // The first attempt founds a hold with a 500 ms life, but its answer arrives at 600 ms, after
    // another process took the lock: the hold is given back and the acquire waits again. Its
    // timeout is 2,000 ms from the call, not from the second try (2,600 ms).
    const p = w.proc({ ttl: 500 });
    const first = new Gate();
    p.wire.fault = (s) => (s.script === "acquire" && p.wire.calls("acquire").length === 1 ? { kind: "gate", gate: first, stage: "reply" } : undefined);
    const pending = w.track(p.locks.mutex("k").acquire({ timeout: 2_000 }));
    await first.reached;
    await w.to(550);
    const other = await w.proc({ ttl: 10_000 }).locks.mutex("k").tryAcquire();
    assert.ok(other, "the first hold expired and another process took the lock");
    await w.to(600);
    first.open();
    await w.stepTo(1_999, () => assert.equal(pending.settled, false, `settled at ${pending.at}: ${String(pending.error)}`));
    await w.to(2_000);
    assert.equal(pending.at, 2_000, String(pending.error));
    assert.ok(pending.error instanceof LockTimeoutError);
    assert.equal(pending.error.timeoutMs, 2_000);
    await other.release();
    await leftNothing("k");
  });

  it("rejects with the reason of a signal aborted before the call, and sends nothing (fresh or re-entering)", async () => {
    const p = w.proc();
    const reason = new Error("never mind");
    const pending = w.track(p.locks.mutex("k").acquire({ signal: AbortSignal.abort(reason) }));
    await w.clock.settle();
    assert.equal(pending.error, reason);
    assert.deepEqual(p.wire.sent.map((s) => s.script ?? s.name), []);
    await p.locks.withLock("k", async () => {
      const sent = p.wire.sent.length;
      await assert.rejects(p.locks.mutex("k").acquire({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
      await w.clock.settle();
      assert.deepEqual(p.wire.sent.slice(sent).map((s) => s.script ?? s.name), []);
    });
  });

  it("rejects at the abort while the acquire's reply is on the wire, and gives back the hold it founded", async () => {
    const p = w.proc();
    const gate = new Gate();
    p.wire.fault = (s) => (s.script === "acquire" ? { kind: "gate", gate, stage: "reply" } : undefined);
    const controller = new AbortController();
    const pending = w.track(p.locks.mutex("k").acquire({ signal: controller.signal }));
    await gate.reached;
    await w.to(40);
    const reason = new Error("stop");
    controller.abort(reason);
    await w.clock.settle();
    assert.equal(pending.at, 40);
    assert.equal(pending.error, reason);
    assert.equal(getEventListeners(controller.signal, "abort").length, 0, "the caller's signal is let go");
    gate.open();
    await w.clock.settle();
    await leftNothing("k");
  });

  it("rejects at the abort while queued; its ticket leaves the line and the release frees the lock for nobody", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const controller = new AbortController();
    const p = w.proc();
    const pending = w.track(p.locks.mutex("k").acquire({ signal: controller.signal }));
    await w.to(1_234);
    assert.equal((await w.queue("k")).length, 1);
    const reason = new Error("enough");
    controller.abort(reason);
    await w.clock.settle();
    assert.equal(pending.at, 1_234);
    assert.equal(pending.error, reason);
    assert.deepEqual(await w.queue("k"), []);
    await holder.release();
    await w.clock.settle();
    assert.equal((await w.lock("k")).fields.o, undefined, "nobody was granted the lock");
    await leftNothing("k");
  });

  it("gives back a grant that arrives after the abort (the release crossed its departure)", async () => {
    const holder = await w.proc().locks.mutex("k").acquire();
    const p = w.proc();
    const gate = new Gate();
    p.wire.fault = (s) => (s.script === "leave-queue" ? { kind: "gate", gate, stage: "execution" } : undefined);
    const controller = new AbortController();
    const pending = w.track(p.locks.mutex("k").acquire({ signal: controller.signal }));
    await w.clock.settle();
    const [ticket] = await w.queue("k");
    controller.abort(new Error("gone"));
    await holder.release();
    await w.clock.settle();
    assert.equal((await w.lock("k")).fields.h, ticket, "granted in Redis, announced to a waiter that left");
    assert.equal(pending.ok, false, "it never became a lease");
    gate.open();
    await w.clock.settle();
    await leftNothing("k");
  });

  it("close() settles every pending call at once — waits, a held lease, a running section — and leaves no hold or ticket", async () => {
    const other = w.proc();
    const busy = await other.locks.mutex("busy").acquire();
    const permit = await other.locks.semaphore("pool", { permits: 1 }).acquire();
    const p = w.proc();
    const held = await p.locks.mutex("a").acquire();
    const end = later();
    const section = w.track(p.locks.withLock("b", () => end.promise));
    const waits: Tracked<Lease>[] = [
      w.track(p.locks.mutex("busy").acquire()),
      w.track(p.locks.mutex("busy").acquire({ timeout: 60_000 })),
      w.track(p.locks.semaphore("pool", { permits: 1 }).acquire()),
    ];
    await w.to(500);
    const closing = w.track(p.locks.close());
    await w.clock.settle();
    assert.equal(closing.at, 500);
    for (const t of waits) {
      assert.equal(t.at, 500);
      assert.ok(t.error instanceof ClosedError);
    }
    assert.ok(held.signal.aborted && !held.held);
    end.resolve();
    await w.clock.settle();
    assert.ok(section.error instanceof LockLostError, "the section learns its lease ended");
    assert.throws(() => p.locks.mutex("a"), ClosedError);
    await Promise.all([busy.release(), permit.release()]);
    await w.clock.settle();
    assert.deepEqual(await w.traces(), []);
  });

  it("close() rejects an acquire whose reply is on the wire with ClosedError at once; the hold it founded is given back", async () => {
    const p = w.proc();
    const gate = new Gate();
    p.wire.fault = (s) => (s.script === "acquire" ? { kind: "gate", gate, stage: "reply" } : undefined);
    const pending = w.track(p.locks.mutex("k").acquire());
    await gate.reached;
    const closing = w.track(p.locks.close());
    await w.clock.settle();
    assert.ok(pending.error instanceof ClosedError);
    assert.ok(closing.ok, "close() does not wait for the held reply");
    gate.open();
    await w.clock.settle();
    await leftNothing("k");
  });
});
