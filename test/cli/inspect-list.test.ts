// surelock inspect and list: what Redis holds, as text and as --json, checked against leases
// taken through the library in this process.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { KeySpace } from "../../src/keys.js";
import type { Lease } from "../../src/index.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { LockState } from "../../src/cli/lock-state.js";
import type { ListRow } from "../../src/cli/list.js";
import { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { cli, eventually, Side } from "./support.js";

after(stopAll);

/** The first node's lock state; fails the test if that node reported an error. */
function first(report: InspectReport): LockState & { node: string } {
  const node = report.nodes[0];
  assert.ok(node && !("error" in node), JSON.stringify(node));
  return node;
}

void describe("surelock inspect and list", () => {
  let server: RedisServer;
  let redis: string[];
  const side = new Side();
  const leases: Lease[] = [];
  let mutexLease: Lease;

  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
    const locks = side.locks(server);
    // A mutex entered twice by one explicit owner, a semaphore (one holder with 2 permits) and a read
    // lock with two holders each.
    mutexLease = await locks.mutex("orders:1").acquire({ owner: "worker-7" });
    leases.push(mutexLease, await locks.mutex("orders:1").acquire({ owner: "worker-7" }));
    leases.push(await locks.mutex("orders:2").acquire({ owner: "worker-8" }));
    leases.push(await locks.mutex("other").acquire({ owner: "worker-9" }));
    const sem = locks.semaphore("pdf", { permits: 3 });
    leases.push(await sem.acquire({ owner: "pdf-a" }), await sem.acquire({ owner: "pdf-b", permits: 2 }));
    const rw = locks.readWriteLock("doc");
    leases.push(await rw.read().acquire({ owner: "reader-1" }), await rw.read().acquire({ owner: "reader-2" }));
    leases.push(await locks.mutex("a*b").acquire({ owner: "star" }), await locks.mutex("axb").acquire({ owner: "x" }));
    leases.push(await side.locks(server, "elsewhere").mutex("orders:1").acquire({ owner: "other-prefix" }));
  });
  after(async () => {
    for (const lease of leases.reverse()) await lease.release();
    await side.close();
  });

  void it("inspect --json shows the holder's owner, entries, fencing token and PTTL", async () => {
    const r = await cli(["inspect", ...redis, "orders:1", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as InspectReport;
    assert.equal(report.key, "orders:1");
    assert.equal(report.prefix, "surelock");
    assert.equal(report.locked, true);
    assert.equal(report.nodes.length, 1);
    const node = first(report);
    assert.equal(node?.node, `127.0.0.1:${server.port}`);
    const holder = node?.mutex?.holder;
    assert.equal(holder?.owner, "worker-7");
    assert.equal(holder?.entries, 2);
    assert.equal(holder?.fencingToken, mutexLease.fencingToken.toString());
    assert.ok(holder && holder.pttlMs > 0 && holder.pttlMs <= 30_000, `pttl ${holder?.pttlMs}`);
    assert.equal(node?.rw, null);
    assert.equal(node?.semaphore, null);
  });

  void it("inspect prints the holder as text", async () => {
    const r = await cli(["inspect", ...redis, "orders:1"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /mutex: held by worker-7 \(2 entries\), fencing token (\d+), expires in [\d.]+ s/);
    assert.ok(r.stdout.includes(mutexLease.fencingToken.toString()));
  });

  void it("inspect shows semaphore holders (with their permits) and readers with their owners", async () => {
    const sem = JSON.parse((await cli(["inspect", ...redis, "pdf", "--json"])).stdout) as InspectReport;
    assert.deepEqual(first(sem).semaphore?.holders.map((h) => h.owner).sort(), ["pdf-a", "pdf-b"]);
    const doc = JSON.parse((await cli(["inspect", ...redis, "doc", "--json"])).stdout) as InspectReport;
    assert.deepEqual(first(doc).rw?.holders.filter((h) => h.mode === "r").map((h) => h.owner).sort(), ["reader-1", "reader-2"]);
    assert.equal(first(doc).rw?.holders.find((h) => h.mode === "w"), undefined);
    const text = (await cli(["inspect", ...redis, "pdf"])).stdout;
    assert.deepEqual(first(sem).semaphore?.holders.map((h) => `${h.owner} ${h.permits}`).sort(), ["pdf-a 1", "pdf-b 2"]);
    assert.equal(first(sem).semaphore?.limit, 3);
    assert.match(text, /semaphore: 3 of 3 permits taken/);
    assert.match(text, /pdf-a, fencing token \d+, expires in/);
    assert.match(text, /pdf-b \(2 permits\), fencing token \d+, expires in/);
  });

  void it("inspect lists the waiters queued for a fair lock, head first", async () => {
    const holderLocks = side.locks(server);
    const held = await holderLocks.mutex("fair").acquire();
    const stop = new AbortController();
    const waiters = [side.locks(server), side.locks(server)].map((l) =>
      l.mutex("fair", { fair: true }).acquire({ signal: stop.signal }).then((lease) => lease.release(), () => {}),
    );
    const queue = new KeySpace("surelock").exclusive("fair").queue;
    await eventually("two tickets in the queue", async () => Number(await server.command("LLEN", queue)) === 2);
    const tickets = (await server.command("LRANGE", queue, 0, -1)) as string[];

    const r = await cli(["inspect", ...redis, "fair", "--json"]);
    const report = JSON.parse(r.stdout) as InspectReport;
    assert.equal(first(report).mutex?.holder?.owner, held.owner);
    assert.deepEqual(first(report).mutex?.queue.map((w) => w.ticket), tickets);
    const text = (await cli(["inspect", ...redis, "fair"])).stdout;
    assert.match(text, /queue: 2 waiters, served head first/);
    assert.match(text, new RegExp(`1\\. .* \\(ticket ${tickets[0]};`));

    stop.abort();
    await Promise.all(waiters);
    // An aborted acquire rejects at once; its ticket leaves the line right after.
    await eventually("the aborted waiters to leave the line", async () => Number(await server.command("LLEN", queue)) === 0);
    await held.release();
  });

  void it("inspect of a free key says so (and --json has locked: false)", async () => {
    const text = await cli(["inspect", ...redis, "nobody-holds-this"]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /"nobody-holds-this" on .*: not locked, nobody waiting/);
    const report = JSON.parse((await cli(["inspect", ...redis, "nobody-holds-this", "--json"])).stdout) as InspectReport;
    assert.equal(report.locked, false);
    assert.deepEqual(report.nodes[0], { node: `127.0.0.1:${server.port}`, mutex: null, rw: null, semaphore: null, election: null, latch: null });
  });

  void it("list --json reports every lock under the prefix with kind, owner, holders, token and PTTL", async () => {
    const r = await cli(["list", ...redis, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as ListRow[];
    const brief = rows.map((row) => `${row.key} ${row.kind} ${row.owner ?? row.holders}`);
    assert.deepEqual(brief, [
      "a*b mutex star",
      "axb mutex x",
      "doc rw-read 2",
      "orders:1 mutex worker-7",
      "orders:2 mutex worker-8",
      "other mutex worker-9",
      "pdf semaphore 2",
    ]);
    const orders = rows.find((row) => row.key === "orders:1");
    assert.equal(orders?.fencingToken, mutexLease.fencingToken.toString());
    assert.equal(orders?.redisKey, new KeySpace("surelock").exclusive("orders:1").lock);
    assert.ok(orders && orders.pttlMs > 0 && orders.pttlMs <= 30_000);
    assert.equal(orders?.node, `127.0.0.1:${server.port}`);
  });

  void it("list PATTERN filters on the user key with Redis glob syntax", async () => {
    const keys = async (pattern: string) =>
      (JSON.parse((await cli(["list", ...redis, pattern, "--json"])).stdout) as ListRow[]).map((row) => row.key);
    assert.deepEqual(await keys("orders:*"), ["orders:1", "orders:2"]);
    assert.deepEqual(await keys("a\\*b"), ["a*b"]);
    assert.deepEqual(await keys("a?b"), ["a*b", "axb"]);
    assert.deepEqual(await keys("[dp]*"), ["doc", "pdf"]);
  });

  void it("list prints a table, and --prefix selects another namespace", async () => {
    const r = await cli(["list", ...redis, "orders:*"]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.match(lines[0] ?? "", /^KEY\s+KIND\s+OWNER\s+FENCING TOKEN\s+EXPIRES IN$/);
    assert.match(lines[1] ?? "", /^orders:1\s+mutex\s+worker-7\s+\d+\s+[\d.]+ s$/);
    assert.equal(lines.length, 3);
    const other = JSON.parse((await cli(["list", ...redis, "--prefix", "elsewhere", "--json"])).stdout) as ListRow[];
    assert.deepEqual(other.map((row) => `${row.key} ${row.owner}`), ["orders:1 other-prefix"]);
  });

  void it("--key-prefix sees the locks of a client with an ioredis keyPrefix, which list and inspect miss without it", async () => {
    const prefixed = new Redis({ host: server.host, port: server.port, keyPrefix: "app:", maxRetriesPerRequest: 1 });
    prefixed.on("error", () => {});
    const locks = new Surelock({ redis: prefixed });
    try {
      const lease = await locks.mutex("invoices:9").acquire({ owner: "billing" });
      const without = JSON.parse((await cli(["list", ...redis, "invoices:*", "--json"])).stdout || "[]") as ListRow[];
      assert.deepEqual(without, []);
      const listed = JSON.parse((await cli(["list", ...redis, "--key-prefix", "app:", "--json"])).stdout) as ListRow[];
      assert.deepEqual(listed.map((row) => `${row.key} ${row.owner}`), ["invoices:9 billing"]);
      const inspected = JSON.parse((await cli(["inspect", "invoices:9", ...redis, "--key-prefix", "app:", "--json"])).stdout) as InspectReport;
      assert.equal(first(inspected).mutex?.holder?.fencingToken, lease.fencingToken.toString());
      const bad = await cli(["list", ...redis, "--key-prefix", "{app}"]);
      assert.equal(bad.code, 2, bad.stderr);
      await lease.release();
    } finally {
      await locks.close();
      prefixed.disconnect();
    }
  });

  void it("list with no match prints nothing on stdout and says so on stderr", async () => {
    const r = await cli(["list", ...redis, "no-such-*"]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /no locks under prefix "surelock" matching "no-such-\*"/);
  });
});
