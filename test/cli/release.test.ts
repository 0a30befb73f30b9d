// surelock release: refuses without --force; with it, deletes the lock, wakes the waiters and
// leaves the old holder to find out at its next renewal.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { KeySpace } from "../../src/keys.js";
import { LockLostError } from "../../src/index.js";
import { assertEveryKeyExpires, Cli, cli, eventually, holder, nodeCommand, Side, within } from "./support.js";

after(stopAll);

void describe("surelock release", () => {
  let server: RedisServer;
  let redis: string[];
  const side = new Side();
  const keys = new KeySpace("surelock");

  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
  });
  afterEach(async () => {
    await side.close();
    await assertEveryKeyExpires(server);
  });

  void it("without --force refuses with exit code 2, explains why, and leaves the lock alone", async () => {
    const lease = await side.locks(server).mutex("kept").acquire();
    const r = await cli(["release", ...redis, "kept"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^surelock release: refusing to release "kept" without --force: its holder is not told/);
    assert.equal(r.stderr.trim().split("\n").length, 1, "one line");
    assert.equal((await holder(server, "kept")).o, lease.owner);
    await lease.release();
  });

  void it("--force frees the lock, a waiting exec proceeds, and the old holder's lease is lost", async () => {
    const locks = side.locks(server);
    // A short ttl, so the holder's next renewal (at ttl/3) comes soon.
    const stuck = await locks.mutex("stuck", { ttl: 1_500 }).acquire();
    const lost = once(stuck.signal, "abort");
    const waiting = new Cli(["exec", ...redis, "--key", "stuck", "--verbose", "--", ...nodeCommand("process.exit(0)")]);
    await eventually("exec to wait", () => waiting.stderr.includes('waiting for lock "stuck"'));

    const r = await cli(["release", ...redis, "stuck", "--force"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`released mutex "stuck" on .*: it was held by ${stuck.owner} \\(1 entry\\), fencing token ${stuck.fencingToken}`));
    const done = await waiting.result();
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stderr, /acquired lock "stuck"/);

    // The holder learns at its next renewal.
    await within(5_000, lost, "the old lease to abort");
    assert.ok(stuck.signal.reason instanceof LockLostError);
    await assert.rejects(stuck.release(), { code: "ERR_SURELOCK_LOCK_LOST" });
  });

  void it("--force on a free key says nothing was held, and points at another kind holding the key", async () => {
    const free = await cli(["release", ...redis, "free", "--force"]);
    assert.equal(free.code, 0, free.stderr);
    assert.match(free.stdout, /mutex "free" on .* was not held: nothing released/);

    const permit = await side.locks(server).semaphore("sem-only", { permits: 2 }).acquire();
    const r = await cli(["release", ...redis, "sem-only", "--force"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /"sem-only" is held as a semaphore: use --kind semaphore to release that/);
    assert.ok(await permit.isHeld(), "a mutex release does not touch the semaphore");
    await permit.release();
  });

  void it("--kind semaphore frees every permit and wakes a waiting acquire", async () => {
    const locks = side.locks(server);
    const sem = locks.semaphore("permits", { permits: 2 });
    const held = [await sem.acquire(), await sem.acquire()];
    const next = side.locks(server).semaphore("permits", { permits: 2 }).acquire({ timeout: 10_000 });
    const r = await cli(["release", ...redis, "permits", "--force", "--kind", "semaphore"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /released semaphore "permits" on .*: it was held by 2 permit holders; waiters were woken/);
    const lease = await next;
    assert.equal(Number(await server.command("ZCOUNT", keys.shared("permits", "sem").holders, "(0", "+inf")), 1, "only the new permit is left");
    await lease.release();
    for (const h of held) await h.release().catch(() => {});
  });

  void it("--kind rw frees the readers of a read-write lock", async () => {
    const rw = side.locks(server).readWriteLock("report");
    const readers = [await rw.read().acquire(), await rw.read().acquire()];
    const r = await cli(["release", ...redis, "report", "--force", "--kind", "rw"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /released read-write lock "report" on .*: it was held by 2 readers; waiters were woken/);
    for (const reader of readers) await reader.release().catch(() => {});
  });

  void it("--kind rw frees the writer of a read-write lock", async () => {
    const writer = await side.locks(server).readWriteLock("doc").write().acquire();
    const r = await cli(["release", ...redis, "doc", "--force", "--kind", "rw"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`released read-write lock "doc" on .*: it was held by ${writer.owner}`));
    assert.equal(Number(await server.command("ZCOUNT", keys.shared("doc", "rw").holders, "(0", "+inf")), 0);
    await writer.release().catch(() => {});
  });
});
