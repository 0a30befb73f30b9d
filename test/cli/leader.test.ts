// surelock leader, and what inspect and list show of elections and latches, against a real
// redis-server, with the elections run through the library in this process.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { LeaderReport } from "../../src/cli/leader.js";
import type { ListRow } from "../../src/cli/list.js";
import { Cli, cli, eventually, Side, within } from "./support.js";

after(stopAll);

void describe("surelock leader", () => {
  let server: RedisServer;
  let redis: string[];
  const side = new Side();
  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
  });
  after(() => side.close());

  void it("shows the leader (owner, value, token, time left), or that there is none: exit 0 either way", async () => {
    const none = await cli(["leader", ...redis, "jobs"]);
    assert.deepEqual([none.code, none.stdout], [0, '"jobs": no leader\n']);
    const election = side.locks(server).election("jobs");
    const lease = await election.campaign({ value: "10.0.0.7:8080" });
    const text = await cli(["leader", ...redis, "jobs"]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^"jobs": led by ${lease.owner}, value "10\\.0\\.0\\.7:8080", fencing token ${lease.fencingToken}, expires in \\d`));
    const json = await cli(["leader", ...redis, "jobs", "--json"]);
    const report = JSON.parse(json.stdout) as LeaderReport;
    assert.deepEqual({ ...report, leader: { ...report.leader, expiresInMs: 0 } }, {
      key: "jobs", prefix: "surelock", leader: { owner: lease.owner, value: "10.0.0.7:8080", fencingToken: lease.fencingToken.toString(), expiresInMs: 0 },
    });
    await election.resign();
  });

  void it("--wait waits for a leader and prints it; with --timeout it gives up with 75", async () => {
    const waiting = new Cli(["leader", ...redis, "wait-for-me", "--wait"]);
    await eventually("the CLI to wait", () => waiting.stderr.includes("yet: waiting for one"));
    const election = side.locks(server).election("wait-for-me");
    const lease = await election.campaign({ value: "here" });
    const r = await waiting.result();
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`led by ${lease.owner}, value "here"`));
    await election.resign();
    const late = await cli(["leader", ...redis, "nobody", "--wait", "--timeout", "300ms"]);
    assert.equal(late.code, 75, late.stderr);
    assert.match(late.stderr, /^surelock leader: no leader of "nobody" within 300 ms$/m);
  });

  void it("--follow prints every change (one JSON object per line with --json) until SIGTERM, then exits 0", async () => {
    const follow = new Cli(["leader", ...redis, "followed", "--follow", "--json"]);
    const reports = (): LeaderReport[] => follow.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as LeaderReport);
    await eventually("the first reading", () => reports().length === 1);
    const election = side.locks(server).election("followed");
    const lease = await election.campaign({ value: "v1" });
    await eventually("the new leader", () => reports().length === 2);
    await election.proclaim("v2");
    await eventually("its new value", () => reports().length === 3);
    await election.resign();
    await eventually("the vacancy", () => reports().length === 4);
    follow.kill("SIGTERM");
    const r = await follow.result();
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(reports().map((x) => x.leader && `${x.leader.owner}=${x.leader.value}`), [null, `${lease.owner}=v1`, `${lease.owner}=v2`, null]);
    assert.ok(reports().every((x) => typeof x.at === "string" && !Number.isNaN(Date.parse(x.at))));
  });

  void it("inspect and list show an election's leader and candidates, and a latch's count", async () => {
    const locks = side.locks(server);
    const lease = await locks.election("svc").campaign({ value: "a" });
    const other = side.locks(server).election("svc");
    const candidate = other.campaign();
    const latch = locks.latch("svc", { count: 3 });
    await latch.countDown();
    await eventually("the candidate in line", async () => (await server.command("LLEN", "surelock:election:{svc}:queue")) === 1);
    const text = await cli(["inspect", ...redis, "svc"]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`election: led by ${lease.owner}, value "a", fencing token ${lease.fencingToken}`));
    assert.match(text.stdout, /candidates: 1 waiting, served head first/);
    assert.match(text.stdout, /countdown latch: 2 of 3 count downs left, expires in /);
    const report = JSON.parse((await cli(["inspect", ...redis, "svc", "--json"])).stdout) as InspectReport;
    const node = report.nodes[0];
    assert.ok(node && !("error" in node));
    assert.equal(report.locked, true);
    assert.deepEqual([node.election?.holder?.owner, node.election?.holder?.value, node.election?.holder?.proclaimed, node.election?.candidates.length],
      [lease.owner, "a", true, 1]);
    assert.deepEqual([node.latch?.count, node.latch?.left], [3, 2]);
    const rows = JSON.parse((await cli(["list", ...redis, "svc", "--json"])).stdout) as ListRow[];
    assert.deepEqual(rows.map((r) => [r.kind, r.owner, r.fencingToken, r.left, r.count]),
      [["election", lease.owner, lease.fencingToken.toString(), undefined, undefined], ["latch", null, null, 2, 3]]);
    const table = await cli(["list", ...redis, "svc"]);
    assert.match(table.stdout, /svc\s+latch\s+2 of 3 left\s+-\s/);
    await lease.release();
    await within(5_000, candidate, "the candidate");
    await other.resign();
  });
});
