// The one-shot commands (inspect, list, release) with one `--redis` node that does not answer:
// each does its part on the node that does, names the other on stderr with what that costs, and
// exits with 69.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { ListRow } from "../../src/cli/list.js";
import { assertEveryKeyExpires, cli, holder, Side } from "./support.js";

after(stopAll);

void describe("surelock inspect, list and release with a node down", () => {
  let live: RedisServer;
  let redis: string[];
  let down: RegExp;
  const side = new Side();

  before(async () => {
    live = await startStandalone();
    const stopped = await startStandalone();
    await stopped.stop();
    redis = ["--redis", live.url, "--redis", stopped.url];
    down = new RegExp(`cannot connect to redis://127\\.0\\.0\\.1:${stopped.port}`);
  });
  afterEach(async () => {
    await side.close();
    await assertEveryKeyExpires(live);
  });

  void it("inspect reports the holder on the live node, the other node as unknown, and exits 69", async () => {
    const lease = await side.locks(live).mutex("seen").acquire({ owner: "worker-1" });
    const r = await cli(["inspect", ...redis, "seen"]);
    assert.equal(r.code, 69, r.stderr);
    assert.match(r.stdout, /"seen" on 127\.0\.0\.1:\d+ \(prefix "surelock"\):\n {2}mutex: held by worker-1/);
    assert.match(r.stdout, /: unknown \(cannot connect to/);
    assert.match(r.stderr, down);
    await lease.release();
  });

  void it("list shows the live node's locks, says the other node's are missing, and exits 69", async () => {
    const lease = await side.locks(live).mutex("listed").acquire({ owner: "worker-2" });
    const r = await cli(["list", ...redis, "--json"]);
    assert.equal(r.code, 69, r.stderr);
    const rows = JSON.parse(r.stdout) as ListRow[];
    assert.deepEqual(rows.map((row) => [row.key, row.owner, row.node]), [["listed", "worker-2", `127.0.0.1:${live.port}`]]);
    assert.match(r.stderr, new RegExp(`${down.source}.*\\(its locks are missing from this list\\)`));
    await lease.release();
  });

  void it("release --force frees the lock on the live node, says nothing was released on the other, and exits 69", async () => {
    const locks = side.locks(live);
    const lease = await locks.mutex("freed").acquire({ owner: "worker-3" });
    const r = await cli(["release", ...redis, "freed", "--force"]);
    assert.equal(r.code, 69, r.stderr);
    assert.match(r.stdout, /released mutex "freed" on 127\.0\.0\.1:\d+: it was held by worker-3/);
    assert.match(r.stderr, new RegExp(`${down.source}.*\\(nothing was released there; it expires after its ttl\\)`));
    assert.deepEqual(await holder(live, "freed"), {});
    const inspected = JSON.parse((await cli(["inspect", "--redis", live.url, "freed", "--json"])).stdout) as InspectReport;
    assert.equal(inspected.locked, false);
    // The holder was not told: its own release finds the lock gone and reports the loss.
    await assert.rejects(lease.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });
});
