// Found by the 10-minute PostgreSQL torture run (test/postgres/torture.ts --seconds 600 --seed 30): a
// worker process reported an unhandled rejection, "Release called on client which has already been
// released to the pool". src/postgres/wakeups.ts opens its LISTEN connection with
// run(c, "LISTEN ...", ..., owned = c): when the LISTEN fails with its connection (a backend
// terminated, a reply lost), run() has already given the client back ended (giveBack(owned, true)),
// and open()'s catch calls client.release(true) a second time. pg throws from inside the catch,
// open() rejects, connect() is called as `void this.connect()`: the rejection is unhandled (it ends
// a process that runs with the default --unhandled-rejections=throw), and schedule() never runs, so
// the wake-up connection is not retried. The fix: the catch gives the client back with
// giveBack(client, true), which tolerates a client already given back, and goes on to schedule().
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Surelock } from "../../src/index.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { within } from "../helpers/fixtures.js";
import { fresh, postgresSuite, sleep } from "./support.js";

describe("PostgreSQL wake-ups: the LISTEN's connection lost", () => {
  const ctx = postgresSuite();

  it("leaves no unhandled rejection, and the waiter is still served", {
    timeout: 60_000,
  }, async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    const name = fresh("listen");
    const proxy = await startFaultProxy({ host: ctx.server.host, port: ctx.server.port });
    const a = new Surelock({ postgres: ctx.pool(), ttl: 2_000 });
    const b = new Surelock({ postgres: ctx.pool({ host: proxy.host, port: proxy.port }), ttl: 2_000, commandTimeout: 1_000, pollInterval: 200 });
    try {
      const held = await within(10_000, a.mutex(name).acquire(), "a's acquire");
      // b's first wait opens its wake-up connection; the LISTEN runs and its reply is lost with the connection.
      const lost = proxy.cutReply({ text: "LISTEN" });
      const waiting = b.mutex(name).acquire({ timeout: 20_000 });
      // Should the test end early (its failure), the wait ends at close() with ClosedError: handled here.
      waiting.catch(() => {});
      await within(10_000, lost, "the LISTEN's reply lost");
      // A rejection is reported at the end of the microtask queue's turn: give it a few turns of the loop.
      await sleep(200);
      await within(10_000, held.release(), "a's release");
      const lease = await within(25_000, waiting, "b's acquire");
      await lease.release();
      assert.deepEqual(unhandled.map(String), []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await Promise.all([a.close(), b.close()]);
      await proxy.close();
    }
  });
});
