import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FencedError } from "../../src/errors.js";
import type { PostgresStore } from "../../src/postgres/store.js";
import { fresh, postgresSuite, sleep } from "./support.js";

const TTL_MS = 800;
const DRIFT_MS = Math.floor(TTL_MS * 0.01) + 2;
const RUN_MS = 15_000;

interface Interval { hold: string; from: number; to: number }

describe("PostgreSQL store under a nemesis", () => {
  const ctx = postgresSuite();

  it("backends terminated, the server killed and restarted: believed holds never overlap, fenced writes commit in token order, none lost, progress made", async () => {
    const name = fresh("nemesis");
    const resource = fresh("register");
    await ctx.server.query("CREATE TABLE register (k text PRIMARY KEY, n integer NOT NULL)");
    await ctx.server.query("CREATE TABLE register_log (seq bigserial PRIMARY KEY, token bigint NOT NULL, hold text NOT NULL)");
    await ctx.server.query("INSERT INTO register VALUES ($1, 0)", [resource]);
    const stores: PostgresStore[] = [];
    for (let i = 0; i < 3; i++) stores.push(ctx.store({ callTimeoutMs: 1_000, pollMs: 200 }, ctx.pool({ max: 4 })));
    const pools = ctx.pools.slice(-3);
    const intervals: Interval[] = [];
    const counts = { cycles: 0, written: 0, fenced: 0, failed: 0 };
    let stop = false;

    const worker = async (w: number) => {
      const store = stores[w % 3]!;
      const pool = pools[w % 3]!;
      for (let i = 0; !stop; i++) {
        const hold = `w${w}-${i}`;
        const watch = store.watch(name, hold);
        let grant: { token: bigint; validUntil: number } | undefined;
        try {
          while (!stop && !grant) {
            const r = await store.acquire({ names: [name], hold, owner: hold, mode: "x", ttlMs: TTL_MS, reentry: { kind: "fresh" }, ticketMs: 2_000 });
            if (r.status === "founded") grant = { token: r.token, validUntil: r.validUntil };
            else if (r.status === "busy") await watch.next(r.waitMs + 5);
          }
        } catch {
          counts.failed++;
          await sleep(20);
          // An attempt whose answer never came may have founded the hold: give it back.
          await store.release([name], hold).catch(() => {});
          continue;
        } finally {
          watch.close();
        }
        if (!grant) break;
        const from = performance.now();
        let validUntil = grant.validUntil - DRIFT_MS;
        try {
          if (i % 3 === 0) {
            const sent = performance.now();
            const r = await store.extend([name], hold, TTL_MS);
            // The ordering rule: the newest confirmation of the hold sets its validity.
            validUntil = r.live ? r.validUntil - DRIFT_MS : Math.min(validUntil, sent);
          }
          const client = await pool.connect();
          client.on("error", () => {});
          try {
            await client.query("BEGIN");
            await store.guard(resource).check(client, grant.token);
            await client.query("UPDATE register SET n = n + 1 WHERE k = $1", [resource]);
            await client.query("INSERT INTO register_log (token, hold) VALUES ($1, $2)", [grant.token.toString(), hold]);
            await client.query("COMMIT");
            counts.written++;
          } catch (e) {
            if (e instanceof FencedError) counts.fenced++;
            await client.query("ROLLBACK").catch(() => {});
            client.release(true);
            throw e;
          }
          client.release();
        } catch {
          counts.failed++;
        }
        const to = Math.min(validUntil, performance.now());
        intervals.push({ hold, from, to });
        await store.release([name], hold).catch(() => {});
        counts.cycles++;
      }
    };

    const nemesis = async () => {
      const steps = ["terminate", "restart", "terminate", "stall", "terminate"] as const;
      for (let i = 0; !stop; i++) {
        await sleep(1_500);
        if (stop) break;
        const step = steps[i % steps.length]!;
        if (step === "terminate") {
          await ctx.server.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'").catch(() => {});
        } else if (step === "restart") {
          await ctx.server.kill();
          await sleep(300);
          await ctx.server.restart();
        } else {
          // A session that holds the lock's row for a while, as a stalled transaction would.
          await ctx.server.query("BEGIN; SELECT 1 FROM surelock.locks WHERE name = '" + name + "' FOR UPDATE; SELECT pg_sleep(0.6); COMMIT").catch(() => {});
        }
      }
    };

    const running = [...Array.from({ length: 6 }, (_, w) => worker(w)), nemesis()];
    await sleep(RUN_MS);
    stop = true;
    await Promise.all(running);

    const sorted = intervals.filter((x) => x.to > x.from).sort((a, b) => a.from - b.from);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(sorted[i]!.from >= sorted[i - 1]!.to, `believed holds overlap: ${JSON.stringify(sorted[i - 1])} and ${JSON.stringify(sorted[i])}`);
    }
    const log = (await ctx.server.query<{ token: string }>("SELECT token FROM register_log ORDER BY seq")).rows.map((r) => BigInt(r.token));
    for (let i = 1; i < log.length; i++) assert.ok(log[i]! > log[i - 1]!, `commit ${i}: token ${log[i]} after ${log[i - 1]}`);
    const n = (await ctx.server.query<{ n: number }>("SELECT n FROM register WHERE k = $1", [resource])).rows[0]!.n;
    assert.equal(n, log.length, "every committed increment is there");
    assert.ok(counts.written >= 20, `progress: ${JSON.stringify(counts)}`);
    assert.ok(log.length >= counts.written, "a commit whose reply was lost may add one the client did not count, never fewer");
  });
});
