// Found by the PostgreSQL torture run (test/postgres/torture.ts, seed 1, 30 s: a lock idle for 4.8 s
// with waiters present after the server came back): a waiter whose acquire failed while it could
// not reach the server cannot take its ticket back, and its ticket holds every later waiter back
// for the store's ticket lifetime, max(10 s, 10 poll bounds) (src/postgres/locks.ts), whatever the
// lock's ttl. On Redis a ticket lapses after its ticket lease, the lock's ttl within 60 ms … 3 s
// (src/waiting/waiting-room.ts, docs/protocol.md): "a dead or paused waiter holds the others back
// ... no longer than that". Issue 30 asks for the same handoff guarantees as the Redis waiting room.
//
// Marked `todo` (it runs and reports, without failing the suite) until src/postgres/locks.ts, which
// belongs to the PostgreSQL store's branch, derives the ticket lifetime from the lock's ttl as
// Redis does (and re-attempts at least every third of it).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConnectionError, Surelock } from "../../src/index.js";
import { startProxy } from "../helpers/tcp-proxy.js";
import { fresh, postgresSuite, sleep } from "./support.js";

const TTL = 1_000;

/** `p`, or a rejection after `ms`: every await of this file is bounded. */
async function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

describe("PostgreSQL waiting room: a waiter that is gone", () => {
  const ctx = postgresSuite();

  it("holds the lock back no longer than the lock's ttl (Redis's ticket lease), not the store's 10 s ticket lifetime", {
    todo: "src/postgres/locks.ts keeps a ticket 10 s without a refresh whatever the ttl (see the file's comment)",
    timeout: 60_000,
  }, async () => {
    const name = fresh("lapse");
    const proxy = await startProxy({ host: ctx.server.host, port: ctx.server.port });
    const a = new Surelock({ postgres: ctx.pool(), ttl: TTL, pollInterval: 200 });
    const b = new Surelock({ postgres: ctx.pool({ host: proxy.host, port: proxy.port, connectionTimeoutMillis: 500 }), ttl: TTL, commandTimeout: 500, pollInterval: 200 });
    const c = new Surelock({ postgres: ctx.pool(), ttl: TTL, pollInterval: 200 });
    try {
      const held = await within("a's acquire", 10_000, a.mutex(name).acquire());
      const waiting = b.mutex(name).acquire({ timeout: 30_000 }).then(() => "acquired", (e: unknown) => e);
      // b's ticket is in the queue (b is a live waiter, it refreshes it with each attempt).
      for (let i = 0; ; i++) {
        const r = await ctx.server.query<{ n: string }>("SELECT count(*) AS n FROM surelock.tickets WHERE name LIKE '%' || $1", [name]);
        if (r.rows[0]!.n !== "0") break;
        assert.ok(i < 200, "b's ticket never showed up in the queue");
        await sleep(25);
      }
      // b is cut off: its next attempt fails (ConnectionError), and so does its attempt to leave the queue.
      proxy.blackhole();
      const outcome = await within("b's acquire to fail", 15_000, waiting);
      assert.ok(outcome instanceof ConnectionError, `b's acquire: ${String(outcome)}`);
      await within("a's release", 10_000, held.release());
      const from = performance.now();
      const lease = await within("c's acquire", 20_000, c.mutex(name).acquire({ timeout: 15_000 }));
      const waited = performance.now() - from;
      await lease.release();
      // Redis's bound is the ticket lease (the ttl here, 1 s) plus a poll; 5 s leaves room for a loaded machine.
      assert.ok(waited < 5_000, `c waited ${waited.toFixed(0)} ms behind a waiter that was gone (the lock's ttl is ${TTL} ms)`);
    } finally {
      proxy.pass();
      await Promise.all([a.close(), b.close(), c.close()]);
      await proxy.close();
    }
  });
});
