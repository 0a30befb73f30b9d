/**
 * close() as one state machine (open → closing → closed), on a virtual clock: a second close() is
 * the first one; once it began, every call that would send anything is refused with ClosedError
 * and nothing more goes on the wire; a release already on the wire is let finish — close() waits
 * for it rather than cutting it short — and that wait is bounded by the release's own bound.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import diagnostics from "node:diagnostics_channel";
import { ClosedError, ConnectionError } from "../../src/index.js";
import { Gate } from "../../src/testing/index.js";
import { World } from "./support.js";

describe("fast: close() is one close", () => {
  let w: World;
  let gate: Gate;
  beforeEach(async () => {
    w = await World.create();
    gate = new Gate();
  });
  afterEach(async () => {
    gate.open();
    await w.close();
  });

  it("a second close() returns the first one's promise, and gives each lease back once", async () => {
    const p = w.proc();
    const lease = await p.locks.mutex("k").acquire();
    const first = p.locks.close();
    const second = p.locks.close();
    assert.equal(second, first);
    const closing = w.track(first);
    await w.clock.settle();
    assert.ok(closing.ok);
    assert.equal(p.locks.close(), first, "also once it ended");
    assert.equal(p.wire.calls("release").length, 1, "one release for the one lease");
    assert.equal(lease.signal.reason?.reason, "closed");
    assert.deepEqual(await w.traces(), []);
  });

  it("once close() began, every call that would send anything is refused with ClosedError, and nothing is sent", async () => {
    const p = w.proc();
    const mutex = p.locks.mutex("k");
    const semaphore = p.locks.semaphore("s", { permits: 2 });
    const closing = w.track(p.locks.close());
    // Refused while closing, not only once closed.
    assert.throws(() => p.locks.mutex("k"), ClosedError);
    await w.clock.settle();
    assert.ok(closing.ok);
    const sent = p.wire.sent.length;
    assert.throws(() => p.locks.mutex("other"), ClosedError);
    assert.throws(() => p.locks.readWriteLock("k"), ClosedError);
    assert.throws(() => p.locks.semaphore("s", { permits: 1 }), ClosedError);
    assert.throws(() => p.locks.guard("r"), ClosedError);
    await assert.rejects(mutex.acquire(), ClosedError);
    await assert.rejects(mutex.tryAcquire(), ClosedError);
    await assert.rejects(mutex.withLock(() => "never"), ClosedError);
    await assert.rejects(semaphore.setPermits(3), ClosedError);
    await w.clock.settle();
    assert.equal(p.wire.sent.length, sent, "nothing went on the wire after close()");
  });

  it("a release on the wire when close() is called is let finish: it resolves, then close() does", async () => {
    const lost: unknown[] = [];
    const onLost = (m: unknown): void => { lost.push(m); };
    diagnostics.subscribe("surelock:lost", onLost);
    try {
      const p = w.proc();
      const lease = await p.locks.mutex("k").acquire();
      p.wire.fault = (s) => (s.script === "release" ? { kind: "gate", gate, stage: "execution" } : undefined);
      const releasing = w.track(lease.release());
      await gate.reached;
      await w.to(100);
      const closing = w.track(p.locks.close());
      await w.to(600);
      assert.equal(releasing.settled, false, "the release is not cut short");
      assert.equal(closing.settled, false, "close() waits for it");
      assert.equal(lease.signal.aborted, false, "a lease being released is not taken back by close()");
      gate.open();
      await w.clock.settle();
      assert.ok(releasing.ok, `the release resolved: ${String(releasing.error)}`);
      assert.ok(closing.ok && closing.at === 600);
      assert.equal((await w.lock("k")).fields.h, undefined, "the lock was freed by that release");
      assert.deepEqual(await w.traces(), []);
      assert.equal(p.wire.calls("release").length, 1, "close() sent no second release for it");
      assert.deepEqual(lost, []);
    } finally {
      diagnostics.unsubscribe("surelock:lost", onLost);
    }
  });

  it("close() waits for a release that never gets through only as long as that release's own bound: the lease's validity", async () => {
    const p = w.proc();
    const lease = await p.locks.mutex("k").acquire();
    p.wire.fault = (s) => (s.script === "release" ? { kind: "gate", gate, stage: "execution" } : undefined);
    const releasing = w.track(lease.release());
    await gate.reached;
    const closing = w.track(p.locks.close());
    // The lease was confirmed at 0 for 3 000 ms: trusted until 3 000 − drift (32 ms).
    await w.to(2_967);
    assert.equal(releasing.settled, false);
    assert.equal(closing.settled, false);
    await w.to(2_968);
    await w.clock.settle();
    assert.ok(releasing.error instanceof ConnectionError, String(releasing.error));
    assert.equal(releasing.at, 2_968);
    assert.ok(closing.ok && closing.at === 2_968, `close() settled at ${closing.at}`);
    assert.equal(lease.signal.reason?.reason, "unreachable");
  });
});
