// The shared behaviour suite (suite.ts) on PostgreSQL, with a server of its own; and what only
// PostgreSQL offers: the fencing check inside the user's own transaction.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { FencedError, UnsupportedError } from "../../src/index.js";
import { behaviour } from "./suite.js";
import { fresh, postgresWorld, within } from "./support.js";

const world = postgresWorld();

describe("behaviour: postgres", () => {
  behaviour(world);

  describe("guard(resource).check(client, token) in the user's transaction", () => {
    it("a newer holder's write stands; the older holder's transaction is refused with ERR_SURELOCK_FENCED", async () => {
      const s = world.surelock();
      const key = fresh();
      const resource = fresh("stock");
      const old = await within(15_000, s.mutex(key).acquire());
      await within(15_000, old.release());
      const newer = await within(15_000, s.mutex(key).acquire());
      assert.ok(newer.fencingToken > old.fencingToken);
      const guard = s.guard(resource);
      assert.equal(guard.resource, resource);
      const pool = (world.option().postgres as pg.Pool);
      const client = await within(15_000, pool.connect());
      try {
        await client.query("CREATE TABLE IF NOT EXISTS behaviour_stock (id text PRIMARY KEY, units int)");
        // The newer holder writes first.
        await client.query("BEGIN");
        await within(15_000, guard.check(client, newer.fencingToken));
        await client.query("INSERT INTO behaviour_stock VALUES ($1, 7) ON CONFLICT (id) DO UPDATE SET units = 7", [resource]);
        await client.query("COMMIT");
        // The older holder, late: refused inside its transaction, which it rolls back.
        await client.query("BEGIN");
        const refused = await within(15_000, guard.check(client, old.fencingToken).then(() => null, (e: unknown) => e));
        await client.query("ROLLBACK");
        assert.ok(refused instanceof FencedError, String(refused));
        assert.equal(refused.code, "ERR_SURELOCK_FENCED");
        const { rows } = await client.query("SELECT units FROM behaviour_stock WHERE id = $1", [resource]);
        assert.equal(rows[0]?.units, 7);
        // The same token again is not newer than itself: it goes through.
        await client.query("BEGIN");
        await within(15_000, guard.check(client, newer.fencingToken));
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      await within(15_000, newer.release());
      await assert.rejects(guard.write(newer.fencingToken, "SET", "k", "v"), UnsupportedError);
      await assert.rejects(guard.highestToken(), UnsupportedError);
    });
  });
});
