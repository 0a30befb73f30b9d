/**
 * `surelock inspect` and `list` on keys a multiLock holds or waits for: each key reads as a mutex
 * held by the set's hold (its owner, that key's fencing token), and a waiting set's ticket reads
 * as a multiLock's in the queue of each of its keys.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { ListRow } from "../../src/cli/list.js";
import type { Lease } from "../../src/index.js";
import { startsWaiting } from "../helpers/fixtures.js";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { cli, Side } from "../cli/support.js";

after(stopAll);

describe("the CLI on multiLock keys", () => {
  let server: RedisServer;
  const side = new Side();
  let lease: Lease;
  let waiting: Promise<Lease>;
  before(async () => {
    server = await startStandalone();
    const locks = side.locks(server);
    lease = await locks.multiLock(["set:a", "set:b"]).acquire();
    const waiter = side.locks(server).multiLock(["set:b", "set:c"]);
    const waits = startsWaiting(waiter.key);
    waiting = waiter.acquire({ timeout: 30_000 });
    await waits;
  });
  after(async () => {
    // Closed whatever happened to the waiter: an open instance would keep the file from ending.
    try {
      await lease.release();
      await (await waiting).release();
    } finally {
      await side.close();
    }
  });

  it("inspect shows each key held by the set's hold, with that key's token, and the waiting set in line", async () => {
    for (const key of ["set:a", "set:b"]) {
      const r = await cli(["inspect", "--redis", server.url, key, "--json"]);
      assert.equal(r.code, 0, r.stderr);
      const node = (JSON.parse(r.stdout) as InspectReport).nodes[0];
      assert.ok(node && !("error" in node));
      assert.equal(node.mutex?.holder?.owner, lease.owner);
      assert.equal(node.mutex?.holder?.fencingToken, String(lease.fencingTokens.get(key)));
    }
    const text = await cli(["inspect", "--redis", server.url, "set:b"]);
    assert.match(text.stdout, /with other keys \(a multiLock waiting for a holder: others pass it\)/);
    const c = JSON.parse((await cli(["inspect", "--redis", server.url, "set:c", "--json"])).stdout) as InspectReport;
    const node = c.nodes[0];
    assert.ok(node && !("error" in node));
    assert.equal(node.mutex?.holder, null, "the waiting set took nothing");
    assert.equal(node.mutex?.queue[0]?.mode, "n", "waiting for set:b's holder, it lets others pass");
  });

  it("list shows every key of the set as a held mutex", async () => {
    const r = await cli(["list", "--redis", server.url, "set:*", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as ListRow[];
    for (const key of ["set:a", "set:b"]) {
      const row = rows.find((x) => x.key === key);
      assert.equal(row?.kind, "mutex");
      assert.equal(row?.owner, lease.owner);
      assert.equal(row?.fencingToken, String(lease.fencingTokens.get(key)));
    }
  });
});
