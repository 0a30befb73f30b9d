/**
 * A semaphore's limit is stored with it: a caller that asks for another number settles at once
 * with ConflictError (acquire, tryAcquire, withLock), leaving no ticket, and the stored limit holds.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { ConflictError } from "../../src/index.js";
import { Harness } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
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
});
