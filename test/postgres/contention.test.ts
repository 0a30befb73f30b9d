import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { acquireWaiting, fresh, postgresSuite } from "./support.js";

describe("PostgreSQL store: contention", () => {
  const ctx = postgresSuite();

  it("20 workers on 4 stores: never two holders, every fenced increment counted, tokens grow in commit order, served in ticket order", async () => {
    const stores = Array.from({ length: 4 }, () => ctx.store({ pollMs: 500 }, ctx.pool({ max: 6 })));
    const name = fresh("counter");
    const resource = fresh("row");
    await ctx.server.query("CREATE TABLE IF NOT EXISTS counters (k text PRIMARY KEY, n integer NOT NULL, last_token bigint NOT NULL)");
    await ctx.server.query("INSERT INTO counters VALUES ($1, 0, 0)", [resource]);
    let holders = 0;
    let maxHolders = 0;
    const tokens: bigint[] = [];
    const rounds = 4;
    const workers = Array.from({ length: 20 }, (_, w) => (async () => {
      const store = stores[w % stores.length]!;
      const pool = ctx.pools[ctx.pools.length - stores.length + (w % stores.length)]!;
      for (let i = 0; i < rounds; i++) {
        const hold = `w${w}-${i}`;
        const { token } = await acquireWaiting(store, name, hold, 10_000);
        holders++;
        maxHolders = Math.max(maxHolders, holders);
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await store.guard(resource).check(client, token);
          const { rows } = await client.query<{ n: number }>("SELECT n FROM counters WHERE k = $1", [resource]);
          await client.query("UPDATE counters SET n = $2, last_token = $3 WHERE k = $1", [resource, rows[0]!.n + 1, token.toString()]);
          await client.query("COMMIT");
          tokens.push(token);
        } finally {
          client.release();
        }
        holders--;
        const released = await store.release([name], hold);
        assert.equal(released.status, "freed");
      }
    })());
    await Promise.all(workers);
    assert.equal(maxHolders, 1);
    const { rows } = await ctx.server.query<{ n: number; last_token: string }>("SELECT n, last_token FROM counters WHERE k = $1", [resource]);
    assert.equal(rows[0]!.n, 20 * rounds);
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${tokens[i]} after ${tokens[i - 1]}`);
    assert.equal(rows[0]!.last_token, tokens.at(-1)!.toString());
    const state = await stores[0]!.inspect(name);
    assert.deepEqual([state.holds.length, state.tickets.length], [0, 0]);
  });

  it("a crashed holder (never renewed, never released) is replaced once its lease runs out; readers share while a writer waits its turn", async () => {
    const [a, b] = [ctx.store({ pollMs: 200 }), ctx.store({ pollMs: 200 })];
    const name = fresh("crash");
    const first = await acquireWaiting(a, name, "crashed", 300);
    const t0 = performance.now();
    const next = await acquireWaiting(b, name, "next", 5_000);
    assert.ok(next.token > first.token);
    assert.ok(performance.now() - t0 >= 200, "not before the lease ran out");
    await b.release([name], "next");

    const rw = fresh("rw");
    await acquireWaiting(a, rw, "r1", 5_000, "r");
    await acquireWaiting(b, rw, "r2", 5_000, "r");
    const writer = acquireWaiting(a, rw, "w1", 5_000, "w");
    let written = false;
    void writer.then(() => { written = true; });
    await a.release([rw], "r1");
    assert.equal(written, false);
    await b.release([rw], "r2");
    await writer;
    assert.equal(written, true);
  });
});
