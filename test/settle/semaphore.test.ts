/**
 * A semaphore's limit is stored with it: a caller that asks for another number settles at once
 * with ConflictError (acquire, tryAcquire, withLock), leaving no ticket, and the stored limit holds.
 * setPermits() settles: at once after close(), at the command timeout in a partition.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ClosedError, ConflictError, ConnectionError } from "../../src/index.js";
import { Harness } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { assertNoTrace, rejection, settles } from "./support.js";

describe("semaphore: the stored limit", () => {
  let server: RedisServer;
  let h: Harness;
  before(async () => { server = await startStandalone(); h = new Harness(server); });
  afterEach(async () => { await h.cleanup(); await assertNoTrace(server); await server.command("FLUSHALL"); });
  after(() => server.stop());

  it("permits 2 in one process, 5 in another: the second gets ConflictError, by every way in, and no ticket", async () => {
    const two = h.locks().semaphore("pool", { permits: 2 });
    const five = h.locks().semaphore("pool", { permits: 5 });
    const a = await two.acquire();
    const b = await two.acquire();
    const attempts: (() => Promise<unknown>)[] = [() => five.acquire(), () => five.acquire({ timeout: 5_000 }), () => five.tryAcquire(), () => five.withLock(() => 1)];
    for (const attempt of attempts) {
      const s = await settles(attempt(), 2_000);
      const error = rejection(s);
      assert.ok(error instanceof ConflictError, String(error));
      assert.equal(error.code, "ERR_SURELOCK_CONFLICT");
      assert.ok(s.atMs < 500, `settled after ${s.atMs.toFixed(0)} ms`);
    }
    assert.equal(await server.command("EXISTS", "surelock:sem:{pool}:queue"), 0, "no ticket queued");
    // The stored limit still rules: a third permit of the two-permit semaphore is not there.
    assert.equal(await two.tryAcquire(), null);
    await a.release();
    await b.release();
  });

  it("also when the other process asks first while nobody holds a permit (the limit outlives the holds)", async () => {
    const two = h.locks().semaphore("pool2", { permits: 2 });
    await (await two.acquire()).release();
    const s = await settles(h.locks().semaphore("pool2", { permits: 5 }).acquire(), 2_000);
    assert.ok(rejection(s) instanceof ConflictError);
  });

  it("setPermits() after close() rejects with ClosedError and sends nothing", async () => {
    const locks = h.locks();
    const sem = locks.semaphore("closed", { permits: 2 });
    await locks.close();
    const s = await settles(sem.setPermits(3), 1_000);
    assert.ok(rejection(s) instanceof ClosedError);
    assert.equal(await server.command("EXISTS", "surelock:sem:{closed}:state"), 0);
  });

  it("setPermits() in a partition rejects with ConnectionError at the command timeout", async () => {
    const proxy = await startFaultProxy(server);
    h.onCleanup(() => proxy.close());
    const locks = h.locks({ commandTimeout: 300 }, proxy);
    const sem = locks.semaphore("cut-off", { permits: 2 });
    await (await sem.acquire()).release();
    proxy.blackhole();
    const s = await settles(sem.setPermits(3), 2_000);
    proxy.resetAll();
    assert.ok(rejection(s) instanceof ConnectionError, String(rejection(s)));
    assert.ok(s.atMs >= 250 && s.atMs < 1_000, `settled after ${s.atMs.toFixed(0)} ms`);
    assert.equal(sem.permits, 2, "not adopted: it was not confirmed");
  });
});
