/**
 * Read-write locks settle without waiting for themselves: a writer reads inside its write (also
 * with a reader of another flow waiting for it), a reader reads again past a waiting writer, an
 * upgrade is refused at once, and a writer that gives up leaves no trace that would refuse readers.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { DeadlockError, LockTimeoutError } from "../../src/index.js";
import { Harness, startsWaiting } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { assertNoTrace, rejection, settles } from "./support.js";

describe("read-write lock: no flow waits for itself", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertNoTrace(server); await server.command("FLUSHALL"); });
  after(() => server.stop());

  it("the writer reads inside its write without waiting", async () => {
    const rw = h.locks().readWriteLock("doc:1");
    const s = await settles(rw.write().withLock(() => rw.read().withLock((r) => r.held, { timeout: 0 })), 2_000);
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.equal(s.value, true);
  });

  it("the writer reads inside its write while a reader of another process waits for the writer", async () => {
    const locks = h.locks();
    const other = h.locks();
    const rw = locks.readWriteLock("doc:2");
    const s = await settles(rw.write().withLock(async () => {
      const waits = startsWaiting("doc:2");
      const outside = other.readWriteLock("doc:2").read().acquire({ timeout: 5_000 });
      await waits;
      const inner = await rw.read().withLock((r) => r.held, { timeout: 0 });
      return { inner, outside };
    }), 3_000);
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.equal(s.value.inner, true);
    const outside = await settles(s.value.outside, 3_000);
    assert.ok(outside.ok, "the outside reader got in once the writer left");
    await outside.value.release();
  });

  it("a flow holding a read reads again past a waiting writer", async () => {
    const locks = h.locks();
    const writerSide = h.locks();
    const rw = locks.readWriteLock("doc:3");
    let writer: Promise<unknown> | undefined;
    const s = await settles(rw.read().withLock(async () => {
      const waits = startsWaiting("doc:3");
      writer = writerSide.readWriteLock("doc:3").write().withLock(() => "wrote", { timeout: 5_000 });
      await waits;
      return rw.read().withLock((r) => r.held, { timeout: 0 });
    }), 3_000);
    assert.ok(s.ok, String((s as { error?: unknown }).error));
    assert.equal(s.value, true);
    assert.equal(await writer, "wrote");
  });

  it("an upgrade (write inside read) rejects at once with DeadlockError; the read goes on", async () => {
    const rw = h.locks().readWriteLock("doc:4");
    await rw.read().withLock(async (read) => {
      const s = await settles(rw.write().acquire(), 500);
      const error = rejection(s);
      assert.ok(error instanceof DeadlockError, String(error));
      assert.equal(error.code, "ERR_SURELOCK_DEADLOCK");
      assert.ok(s.atMs < 50, `rejected after ${s.atMs.toFixed(0)} ms`);
      assert.equal(read.held, true);
    });
  });

  for (const how of ["times out", "aborts"] as const) {
    it(`a writer that ${how} leaves no trace: no mark, no ticket; readers are not refused afterwards`, async () => {
      const readers = h.locks();
      const writers = h.locks();
      const held = await readers.readWriteLock(`doc:${how}`).read().acquire();
      const c = new AbortController();
      const waits = startsWaiting(`doc:${how}`);
      const writer = settles(writers.readWriteLock(`doc:${how}`).write().acquire(how === "times out" ? { timeout: 150 } : { signal: c.signal }), 3_000);
      await waits;
      if (how === "aborts") c.abort(new Error("writer gave up"));
      const error = rejection(await writer);
      assert.ok(how === "aborts" ? String(error).includes("writer gave up") : error instanceof LockTimeoutError, String(error));
      // A new reader of another process gets in at once, even with `timeout: 0`.
      const reader = await settles(h.locks().readWriteLock(`doc:${how}`).read().acquire({ timeout: 0 }), 2_000);
      assert.ok(reader.ok, `refused after the writer left: ${String((reader as { error?: unknown }).error)}`);
      await reader.value.release();
      await held.release();
    });
  }
});
