import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { describe, it } from "node:test";
import { FencedError, SurelockError } from "../../src/errors.js";
import { runFixture } from "../fixtures/processes.js";
import { fresh, postgresSuite } from "./support.js";

/** The next line a fixture prints that matches `pattern`. */
function nextLine(fixture: ReturnType<typeof runFixture>, pattern: RegExp, ms = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} in ${ms} ms`)), ms);
    fixture.lines((line) => {
      if (pattern.test(line)) {
        clearTimeout(timer);
        resolve(line);
      }
    });
  });
}

const send = (child: ChildProcess, line: string) => child.stdin!.write(`${line}\n`);

describe("PostgreSQL store: the transaction fence", () => {
  const ctx = postgresSuite();

  it("records the token; an older token is refused with ERR_SURELOCK_FENCED and its transaction cannot commit", async () => {
    const s = ctx.store();
    const pool = ctx.pool();
    const resource = fresh("res");
    await ctx.server.query("CREATE TABLE IF NOT EXISTS t_fence (k text PRIMARY KEY, v text)");
    const guard = s.guard(resource);
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      await guard.check(c, 5n);
      await c.query("INSERT INTO t_fence VALUES ($1, 'five')", [resource]);
      await c.query("COMMIT");
      await c.query("BEGIN");
      await guard.check(c, 5n);
      await c.query("COMMIT");
      await c.query("BEGIN");
      const refused = await guard.check(c, 4n).then(() => null, (e: unknown) => e);
      assert.ok(refused instanceof FencedError && refused instanceof SurelockError);
      assert.equal(refused.code, "ERR_SURELOCK_FENCED");
      assert.equal(refused.recorded, 5n);
      assert.equal(refused.token, 4n);
      await assert.rejects(c.query("UPDATE t_fence SET v = 'four' WHERE k = $1", [resource]), /current transaction is aborted/);
      await c.query("COMMIT");
    } finally {
      c.release();
    }
    assert.deepEqual((await ctx.server.query("SELECT v FROM t_fence WHERE k = $1", [resource])).rows, [{ v: "five" }]);
  });

  it("two transactions racing on one resource are ordered by its row lock: the older token, second, is refused", async () => {
    const s = ctx.store();
    const pool = ctx.pool();
    const resource = fresh("race");
    const guard = s.guard(resource);
    const newer = await pool.connect();
    const older = await pool.connect();
    try {
      await newer.query("BEGIN");
      await guard.check(newer, 7n);
      await older.query("BEGIN");
      // It waits for the newer transaction's row lock: it must not answer before that one commits.
      let settled = false;
      const racing = guard.check(older, 6n).then(() => "passed", (e: unknown) => e).finally(() => { settled = true; });
      const waiting = await ctx.server.query<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted");
      for (let i = 0; i < 200 && Number(waiting.rows[0]!.n) === 0; i++) {
        waiting.rows = (await ctx.server.query<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted")).rows;
      }
      assert.ok(Number(waiting.rows[0]!.n) > 0, "the second check waits on a lock");
      assert.equal(settled, false);
      await newer.query("COMMIT");
      const outcome = await racing;
      assert.ok(outcome instanceof FencedError && outcome.recorded === 7n);
      await older.query("ROLLBACK");
    } finally {
      newer.release();
      older.release();
    }
  });

  it("bad input is refused before any I/O, naming the argument", async () => {
    const s = ctx.store();
    assert.throws(() => s.guard(""), /invalid resource/);
    await assert.rejects(s.guard("r").check({} as never, 1n), /invalid client/);
    await assert.rejects(s.guard("r").check(ctx.pool(), 0n), /invalid token/);
    await assert.rejects(s.guard("r").check(ctx.pool(), 1 as never), /invalid token/);
  });

  it("two processes: the holder stopped (SIGSTOP) past its lease is fenced in its transaction; the newer holder's write stands", async () => {
    const name = fresh("demo");
    const resource = fresh("account");
    await ctx.server.query("CREATE TABLE IF NOT EXISTS fenced_data (id int PRIMARY KEY, value text, token bigint)");
    await ctx.server.query("INSERT INTO fenced_data VALUES (1, 'initial', 0) ON CONFLICT (id) DO UPDATE SET value = 'initial', token = 0");
    const a = runFixture("pg-writer", [ctx.server.port, name, resource, 1_000, "A"], true);
    const heldA = await nextLine(a, /^held /);
    assert.equal(heldA, "held 1");
    a.child.kill("SIGSTOP");
    const b = runFixture("pg-writer", [ctx.server.port, name, resource, 30_000, "B"], true);
    try {
      // B gets the lock only once A's lease ran out on the database's clock.
      const heldB = await nextLine(b, /^held /);
      assert.equal(heldB, "held 2");
      send(b.child, "write");
      assert.equal(await nextLine(b, /^(written|fenced|error)/), "written");
      // A wakes up believing it holds the lock, and writes.
      send(a.child, "write");
      a.child.kill("SIGCONT");
      assert.equal(await nextLine(a, /^(written|fenced|error)/), "fenced 2");
      assert.deepEqual((await ctx.server.query("SELECT value, token FROM fenced_data WHERE id = 1")).rows, [{ value: "B", token: "2" }]);
    } finally {
      a.child.kill("SIGCONT");
      send(a.child, "exit");
      send(b.child, "exit");
      await Promise.all([a.done, b.done]);
    }
  });
});
