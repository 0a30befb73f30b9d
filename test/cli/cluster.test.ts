// The CLI against a Redis Cluster: a node's URL stands for the whole Cluster.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { startCluster, stopAll, type ClusterSet } from "../helpers/redis-topology.js";
import type { Check } from "../../src/cli/doctor.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { ListRow } from "../../src/cli/list.js";
import { cli, nodeCommand, Side } from "./support.js";

/** SPUBLISH calls served by all primaries so far (INFO commandstats). */
async function spublishCalls(set: ClusterSet): Promise<number> {
  let calls = 0;
  for (const node of set.primaries) {
    const stats = await node.info("commandstats");
    calls += Number(/calls=(\d+)/.exec(stats.cmdstat_spublish ?? "")?.[1] ?? 0);
  }
  return calls;
}

after(stopAll);

void describe("surelock on a Redis Cluster", () => {
  let set: ClusterSet;
  let redis: string[];
  const side = new Side();

  before(async () => {
    set = await startCluster({ primaries: 3 });
    redis = ["--redis", `redis://127.0.0.1:${set.primaries[0]?.port}`];
  });
  afterEach(() => side.close());

  void it("exec runs the command under a lock in the Cluster", async () => {
    const script = "process.stdout.write(process.env.SURELOCK_FENCING_TOKEN)";
    // Keys whose slots live on different primaries.
    for (const key of ["alpha", "bravo", "charlie"]) {
      const r = await cli(["exec", ...redis, "--key", key, "--", ...nodeCommand(script)]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^\d+$/);
    }
  });

  void it("list scans every primary; inspect and release reach the key's node", async () => {
    const locks = side.clusterLocks(set);
    const keys = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    const leases = await Promise.all(keys.map((k) => locks.mutex(k).acquire({ owner: `owner-${k}` })));

    const rows = JSON.parse((await cli(["list", ...redis, "--json"])).stdout) as ListRow[];
    assert.deepEqual(rows.map((r) => `${r.key} ${r.owner}`), keys.map((k) => `${k} owner-${k}`));
    assert.ok(new Set(rows.map((r) => r.node)).size > 1, "the keys live on more than one primary");

    const report = JSON.parse((await cli(["inspect", ...redis, "echo", "--json"])).stdout) as InspectReport;
    const node = report.nodes[0];
    assert.ok(node && !("error" in node), JSON.stringify(node));
    assert.equal(node.mutex?.holder?.owner, "owner-echo");

    const announcedBefore = await spublishCalls(set);
    const released = await cli(["release", ...redis, "echo", "--force"]);
    assert.equal(released.code, 0, released.stderr);
    assert.match(released.stdout, /released mutex "echo" on .*: it was held by owner-echo/);
    // In a Cluster, waiters listen with sharded pub/sub: the wake-up must be an SPUBLISH.
    assert.equal(await spublishCalls(set), announcedBefore + 1);
    const next = await side.clusterLocks(set).mutex("echo").tryAcquire();
    assert.ok(next, "the lock is free again");
    await next.release();
    for (const lease of leases) await lease.release().catch(() => {});
  });

  void it("doctor checks every primary and the Cluster's state", async () => {
    const r = await cli(["doctor", ...redis, "--json"]);
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: Check[] };
    assert.equal(r.code, 0, r.stdout);
    assert.equal(new Set(report.checks.filter((c) => c.check === "version").map((c) => c.node)).size, 3);
    const cluster = report.checks.find((c) => c.check === "cluster");
    assert.equal(cluster?.status, "ok");
    assert.match(cluster?.detail ?? "", /3 primaries, cluster_state ok/);
  });
});
