// surelock doctor: a checklist of ok / warn / fail, exit code 1 on any fail.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startPrimaries, startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import type { Check } from "../../src/cli/doctor.js";
import { cli, eventually } from "./support.js";

after(stopAll);

interface Report {
  readonly ok: boolean;
  readonly checks: readonly Check[];
}

async function doctor(...args: string[]): Promise<{ code: number | null; report: Report; stderr: string }> {
  const r = await cli(["doctor", ...args, "--json"]);
  return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
}

function statusOf(report: Report, check: string): string | undefined {
  return report.checks.find((c) => c.check === check)?.status;
}

void describe("surelock doctor", () => {
  let server: RedisServer;

  before(async () => {
    server = await startStandalone();
  });

  void it("passes a default server: every check runs, none fails, exit code 0", async () => {
    const { code, report } = await doctor("--redis", server.url);
    assert.equal(code, 0);
    assert.equal(report.ok, true);
    assert.deepEqual(report.checks.map((c) => c.check), ["connection", "version", "scripting", "replication", "persistence", "eviction", "latency", "clock"]);
    assert.deepEqual(report.checks.filter((c) => c.status === "fail"), []);
    assert.equal(statusOf(report, "eviction"), "ok");
    assert.equal(statusOf(report, "scripting"), "ok");
    // The test servers run without persistence.
    assert.equal(statusOf(report, "persistence"), "warn");
  });

  void it("prints a checklist with a summary line", async () => {
    const r = await cli(["doctor", "--redis", server.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ok\s+127\.0\.0\.1:\d+\s+version\s+Redis \d+\.\d+\.\d+$/m);
    assert.match(r.stdout, /^warn\s+127\.0\.0\.1:\d+\s+persistence\s+appendonly no/m);
    assert.match(r.stdout, /^\d+ checks ok, \d+ warnings?, 0 failures$/m);
  });

  void it("warns on maxmemory-policy allkeys-lru; --strict turns warnings into exit code 1", async () => {
    await server.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    try {
      const { code, report } = await doctor("--redis", server.url);
      assert.equal(code, 0);
      const eviction = report.checks.find((c) => c.check === "eviction");
      assert.equal(eviction?.status, "warn");
      assert.match(eviction?.detail ?? "", /allkeys-lru/);
      const strict = await doctor("--redis", server.url, "--strict");
      assert.equal(strict.code, 1);
      assert.equal(strict.report.ok, false);
    } finally {
      await server.command("CONFIG", "SET", "maxmemory-policy", "noeviction");
    }
  });

  void it("fails a replica (locks must be taken on the primary) and warns on a primary without min-replicas-to-write", async () => {
    const replica = await startStandalone();
    try {
      await replica.command("REPLICAOF", server.host, server.port);
      const { code, report } = await doctor("--redis", replica.url);
      assert.equal(code, 1);
      const check = report.checks.find((c) => c.check === "replication");
      assert.equal(check?.status, "fail");
      assert.match(check?.detail ?? "", new RegExp(`replica of 127\\.0\\.0\\.1:${server.port}`));

      await eventually("the primary to list its replica", async () => Number((await server.info("replication")).connected_slaves) === 1);
      const primary = await doctor("--redis", server.url);
      assert.equal(primary.code, 0);
      assert.equal(statusOf(primary.report, "replication"), "warn");
      assert.match(primary.report.checks.find((c) => c.check === "replication")?.detail ?? "", /1 replica, min-replicas-to-write 0/);
    } finally {
      await replica.stop();
    }
  });

  void it("measures the server's clock against this host's with TIME: the same machine's clock, so ~0, within the round trip's bound", async () => {
    const { report } = await doctor("--redis", server.url);
    const clock = report.checks.find((c) => c.check === "clock");
    assert.equal(clock?.status, "ok");
    assert.equal(typeof clock?.offsetMs, "number");
    assert.equal(typeof clock?.boundMs, "number");
    // One system clock on both sides: what is left is the bound and the resolutions of the two readings.
    assert.ok(Math.abs(clock?.offsetMs ?? Infinity) <= (clock?.boundMs ?? 0) + 2, `offset ${clock?.offsetMs} ± ${clock?.boundMs} ms`);
    assert.match(clock?.detail ?? "", /^TIME [\d.]+ ms (ahead of|behind) this host's clock \(± [\d.]+ ms, best of 5 round trips\)$/);
  });

  void it("persistence: appendonly yes is ok, no AOF warns; without CONFIG (renamed, or denied by an ACL) it reads INFO persistence and says so", async () => {
    const aof = await startStandalone({ args: ["--appendonly", "yes"] });
    const renamed = await startStandalone({ args: ["--appendonly", "yes", "--rename-command", "CONFIG", ""] });
    try {
      const withAof = (await doctor("--redis", aof.url)).report.checks.find((c) => c.check === "persistence");
      assert.deepEqual([withAof?.status, withAof?.detail], ["ok", "appendonly yes, appendfsync everysec (a power loss can forget the last second of lock changes)"]);

      const fromInfo = (await doctor("--redis", renamed.url)).report.checks.find((c) => c.check === "persistence");
      assert.equal(fromInfo?.status, "ok");
      assert.match(fromInfo?.detail ?? "", /^appendonly yes \(from INFO persistence: CONFIG renamed or disabled\); appendfsync unknown$/);

      await server.command("ACL", "SETUSER", "doctor", "on", ">secret", "~*", "&*", "+@all", "-config");
      try {
        const url = server.url.replace("redis://", "redis://doctor:secret@");
        const { code, report } = await doctor("--redis", url);
        assert.equal(code, 0);
        const denied = report.checks.find((c) => c.check === "persistence");
        assert.equal(denied?.status, "warn");
        assert.match(denied?.detail ?? "", /^appendonly no \(from INFO persistence: CONFIG denied by an ACL\), save unknown: /);
      } finally {
        await server.command("ACL", "DELUSER", "doctor");
      }
    } finally {
      await Promise.all([aof.stop(), renamed.stop()]);
    }
  });

  void it("fails when the server cannot be reached, with exit code 69 (unavailable), not 1 (a failed check)", async () => {
    const gone = await startStandalone();
    const url = gone.url;
    await gone.stop();
    const { code, report } = await doctor("--redis", url);
    assert.equal(code, 69);
    assert.deepEqual(report.checks.map((c) => `${c.check} ${c.status}`), ["connection fail"]);
  });

  void it("in quorum mode, checks every node and warns about an even number of them", async () => {
    const nodes = await startPrimaries(2);
    try {
      const { code, report } = await doctor(...nodes.flatMap((n) => ["--redis", n.url]));
      assert.equal(code, 0);
      const servers = new Set(report.checks.filter((c) => c.check === "version").map((c) => c.node));
      assert.equal(servers.size, 2);
      const quorum = report.checks.find((c) => c.node === "quorum" && c.check === "nodes");
      assert.equal(quorum?.status, "warn");
      assert.match(quorum?.detail ?? "", /2 primaries, 2 must agree/);
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });

  void it("in quorum mode, compares the nodes' clocks (~0 apart here) and states Redlock's restart rule for a node without appendfsync always", async () => {
    const always = ["--appendonly", "yes", "--appendfsync", "always"];
    const nodes = await Promise.all([startStandalone({ args: always }), startStandalone({ args: always }), startStandalone()]);
    try {
      const { code, report } = await doctor(...nodes.flatMap((n) => ["--redis", n.url]));
      assert.equal(code, 0);
      const clocks = report.checks.find((c) => c.node === "quorum" && c.check === "clocks");
      assert.equal(clocks?.status, "ok");
      assert.match(clocks?.detail ?? "", /^clocks of 3 nodes within [\d.]+ ms of each other \(± [\d.]+ ms\)$/);
      const restart = report.checks.find((c) => c.node === "quorum" && c.check === "restart-delay");
      assert.equal(restart?.status, "warn");
      const forgetful = `127.0.0.1:${nodes[2]?.port}`;
      assert.match(restart?.detail ?? "", new RegExp(`^${forgetful.replace(/\./g, "\\.")} may forget recent lock changes on a restart`));
      assert.match(restart?.detail ?? "", /longer than the longest lock ttl/);
      for (const n of nodes.slice(0, 2)) assert.ok(!(restart?.detail ?? "").includes(`:${n.port} `), "the nodes with appendfsync always are not named");

      const durable = await doctor(...nodes.slice(0, 2).flatMap((n) => ["--redis", n.url]));
      assert.equal(durable.report.checks.find((c) => c.check === "restart-delay")?.status, "ok", "every node syncs each change before it answers");
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });
});
