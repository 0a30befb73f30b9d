import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { ConnectionError, InvalidArgumentError, SchemaError, UnsupportedError } from "../../src/errors.js";
import { PostgresStore } from "../../src/postgres/store.js";
import { freePorts } from "../helpers/redis-topology.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { fresh, postgresSuite } from "./support.js";

const mutex = (name: string, hold: string, ttlMs = 5_000) => ({ names: [name], hold, owner: hold, mode: "x" as const, ttlMs, reentry: { kind: "fresh" as const } });

/** Runs `work` and returns its error and how long it took. */
async function failure(work: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const t0 = performance.now();
  const error = await work().then(() => undefined, (e: unknown) => e);
  return { error, ms: performance.now() - t0 };
}

describe("PostgreSQL store: bad input and failures", () => {
  const ctx = postgresSuite();

  it("construction and calls validate their arguments, naming them", async () => {
    assert.throws(() => new PostgresStore({ pool: {} as never }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.pool");
    const pool = ctx.pool();
    assert.throws(() => new PostgresStore({ pool, schema: "Bad-Name" }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.schema");
    assert.throws(() => new PostgresStore({ pool, callTimeoutMs: 0 }), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.callTimeoutMs");
    assert.throws(() => new PostgresStore({ pool, tll: 5 } as never), (e: unknown) => e instanceof InvalidArgumentError && e.argument === "options.tll");
    const s = ctx.store({}, pool);
    const cases: [() => Promise<unknown>, string][] = [
      [() => s.acquire({ ...mutex("k", "h"), names: [] }), "request.names"],
      [() => s.acquire({ ...mutex("k", "h"), names: ["a\u0000b"] }), "request.names[0]"],
      [() => s.acquire({ ...mutex("k", "h"), names: ["a", "a"] }), "request.names"],
      [() => s.acquire({ ...mutex("k", "h"), ttlMs: 1 }), "request.ttlMs"],
      [() => s.acquire({ ...mutex("k", "h"), mode: "q" as never }), "request.mode"],
      [() => s.acquire({ ...mutex("k", "h"), reentry: { kind: "hold" } as never }), "request.reentry.hold"],
      [() => s.acquire({ ...mutex("k", "h"), mode: "s", limit: 2, permits: 3 }), "request.permits"],
      [() => s.acquire({ ...mutex("k", "h"), names: ["a", "b"], mode: "r" }), "request.mode"],
      [() => s.renew([{ kind: "hold", names: ["k"], id: "h", ttlMs: -5 }]), "items[0].ttlMs"],
      [() => s.countDown("l", "id", 0, 1_000), "count"],
    ];
    for (const [call, argument] of cases) {
      await assert.rejects(call(), (e: unknown) => e instanceof InvalidArgumentError && e.argument === argument, argument);
    }
  });

  it("a pool that cannot connect gives ConnectionError within the call's bound", async () => {
    const [port] = await freePorts(1);
    const refused = new pg.Pool({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
    refused.on("error", () => {});
    ctx.pools.push(refused);
    const s = ctx.store({ callTimeoutMs: 1_000 }, refused);
    const r = await failure(() => s.acquire(mutex(fresh(), "h")));
    assert.ok(r.error instanceof ConnectionError, String(r.error));
    assert.ok(r.ms < 1_500, `${r.ms} ms`);
    assert.ok((r.error as Error).cause !== undefined, "the client's error is the cause");

    // A partition: the connection never completes, and the pool would wait forever (no connectionTimeoutMillis).
    const proxy = await startFaultProxy({ host: "127.0.0.1", port: ctx.server.port });
    try {
      proxy.blackhole();
      const s2 = ctx.store({ callTimeoutMs: 500 }, ctx.pool({ host: "127.0.0.1", port: proxy.port }));
      const b = await failure(() => s2.acquire(mutex(fresh(), "h")));
      assert.ok(b.error instanceof ConnectionError, String(b.error));
      assert.ok(b.ms < 1_000, `${b.ms} ms`);
      assert.match((b.error as Error).message, /within the call's bound/);
    } finally {
      await proxy.close();
    }
  });

  it("a role that may not create the schema gets SchemaError naming it; with the schema made by an owner and no grant, SchemaError too", async () => {
    await ctx.server.query("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'weak') THEN CREATE ROLE weak LOGIN; END IF; END $$");
    await ctx.server.query("REVOKE CREATE ON DATABASE postgres FROM PUBLIC");
    const weak = ctx.pool({ user: "weak" });
    const s = ctx.store({ schema: "weak_schema", callTimeoutMs: 2_000 }, weak);
    const r = await failure(() => s.acquire(mutex(fresh(), "h")));
    assert.ok(r.error instanceof SchemaError, String(r.error));
    assert.equal(r.error.schema, "weak_schema");
    assert.equal(r.error.code, "ERR_SURELOCK_SCHEMA");
    assert.match(r.error.message, /cannot be created.*permission denied/);
    assert.ok(r.ms < 2_000);

    await ctx.store({ schema: "owned_schema" }).migrate();
    const s2 = ctx.store({ schema: "owned_schema", callTimeoutMs: 2_000 }, weak);
    const p = await failure(() => s2.acquire(mutex(fresh(), "h")));
    assert.ok(p.error instanceof SchemaError, String(p.error));
    assert.match(p.error.message, /missing privilege.*permission denied/);
  });

  it("createSchema: false refuses a missing schema with SchemaError; migrate() installs it", async () => {
    const s = ctx.store({ schema: "by_migrate", createSchema: false });
    const r = await failure(() => s.acquire(mutex(fresh(), "h")));
    assert.ok(r.error instanceof SchemaError && /not installed/.test(r.error.message), String(r.error));
    await s.migrate();
    assert.equal((await s.acquire(mutex(fresh(), "h"))).status, "founded");
    // A second store of the same schema finds it ready with one read.
    const other = ctx.store({ schema: "by_migrate", createSchema: false });
    const before = other.statements;
    assert.equal((await other.acquire(mutex(fresh(), "h2"))).status, "founded");
    assert.equal(other.statements - before, 3, "two reads at first use, then the call");
  });

  it("connections with synchronous_commit off are refused with UnsupportedError naming the setting", async () => {
    const s = ctx.store({}, ctx.pool({ options: "-c synchronous_commit=off" }));
    const r = await failure(() => s.acquire(mutex(fresh(), "h")));
    assert.ok(r.error instanceof UnsupportedError && /synchronous_commit is off/.test(r.error.message), String(r.error));
  });

  it("two stores installing one schema at once both succeed (the install is serialized)", async () => {
    const [a, b] = [ctx.store({ schema: "racing" }), ctx.store({ schema: "racing" })];
    const name = fresh();
    const [ra, rb] = await Promise.all([a.acquire(mutex(name, "a")), b.acquire(mutex(name, "b"))]);
    assert.deepEqual([ra.status, rb.status].sort(), ["busy", "founded"]);
  });

  it("a lost reply to an acquire is resolved by reading our own row: one hold, one token", async () => {
    const proxy = await startFaultProxy({ host: "127.0.0.1", port: ctx.server.port });
    try {
      const s = ctx.store({}, ctx.pool({ host: "127.0.0.1", port: proxy.port }));
      await s.ready();
      const name = fresh();
      const lost = proxy.cutReply({ text: "lost-reply-hold" });
      const r = await s.acquire(mutex(name, "lost-reply-hold"));
      await lost;
      assert.ok(r.status === "founded" && r.token === 1n, JSON.stringify(r, (_, v: unknown) => (typeof v === "bigint" ? `${v}` : v)));
      const state = await s.inspect(name);
      assert.equal(state.holds.length, 1);
      assert.equal(state.counter, 1n, "the replay took no second token");
    } finally {
      await proxy.close();
    }
  });

  it("a stalled session holding a lock's row makes a call fail within its bound, and the lock works once it ends", async () => {
    const s = ctx.store({ callTimeoutMs: 500 });
    const name = fresh();
    assert.equal((await s.acquire(mutex(name, "h1"))).status, "founded");
    const staller = new pg.Client(ctx.server.config);
    await staller.connect();
    try {
      await staller.query("BEGIN");
      await staller.query("SELECT 1 FROM surelock.locks WHERE name = $1 FOR UPDATE", [name]);
      const r = await failure(() => s.release([name], "h1"));
      assert.ok(r.error instanceof ConnectionError, String(r.error));
      assert.ok(r.ms < 1_000, `${r.ms} ms`);
      await staller.query("ROLLBACK");
    } finally {
      await staller.end();
    }
    // The release may have run after all (its statement was waiting when its connection was ended): either way it is given back now.
    assert.ok(["freed", "gone"].includes((await s.release([name], "h1")).status));
    assert.equal((await s.acquire(mutex(name, "h2"))).status, "founded");
  });

  it("pg_terminate_backend on every store connection: the next call reconnects; the LISTEN connection comes back and wakes again", async () => {
    const s = ctx.store({ pollMs: 10_000 });
    const name = fresh();
    assert.equal(await s.listening(), true);
    const resynced = new Promise<void>((resolve) => {
      const stop = s.listen(name, (w) => {
        if (w.kind === "resync") {
          stop();
          resolve();
        }
      });
    });
    await s.acquire(mutex(name, "h1"));
    await ctx.server.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND usename = 'postgres'");
    await resynced;
    // The pool's idle clients were ended too: the next call may meet one and replays once on a fresh one.
    assert.equal((await s.check([name], "h1")).live, true);
    await s.listening();
    assert.equal((await s.acquire({ ...mutex(name, "waiter"), ticketMs: 10_000 })).status, "busy");
    const woken = s.waitForWake(name, 10_000);
    await s.release([name], "h1");
    assert.equal(await woken, true, "the waiter is woken through the new LISTEN connection");
  });

  it("the server restarted: calls fail with ConnectionError while it is down, leases survive it as data, tokens keep growing", async () => {
    const s = ctx.store({ callTimeoutMs: 1_000 });
    const name = fresh();
    const a = await s.acquire(mutex(name, "h1", 60_000));
    assert.ok(a.status === "founded");
    await ctx.server.kill();
    const down = await failure(() => s.check([name], "h1"));
    assert.ok(down.error instanceof ConnectionError, String(down.error));
    assert.ok(down.ms < 1_500);
    await ctx.server.restart();
    assert.equal((await s.check([name], "h1")).live, true, "the lease is a row: it survives the restart");
    assert.equal((await s.acquire(mutex(name, "h2"))).status, "busy");
    await s.release([name], "h1");
    const b = await s.acquire(mutex(name, "h2"));
    assert.ok(b.status === "founded" && b.token > a.token);
  });
});
