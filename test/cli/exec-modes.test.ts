// surelock exec --semaphore --permits N, --shared and --exclusive: at most N commands at once,
// readers together and a writer alone, each mode with exec's timeouts, signals, loss handling
// and quorum mode. (The mutex, exec's default, is specified in exec.test.ts.)
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { startPrimaries, startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { KeySpace } from "../../src/keys.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import type { ListRow } from "../../src/cli/list.js";
import { readLockState, type LockState } from "../../src/cli/lock-state.js";
import { assertEveryKeyExpires, Cli, cli, eventually, nodeCommand, Scratch, Side, stopLeftovers } from "./support.js";

after(stopAll);

/**
 * A command that logs `start <id> <token>`, runs until the file `go` exists, then logs `end <id>`
 * and exits: the test decides when the holders finish, and the log shows who overlapped.
 */
const HOLD_UNTIL_GO = `
  const fs = require("fs");
  const [log, id, go] = process.argv.slice(1);
  fs.appendFileSync(log, "start " + id + " " + process.env.SURELOCK_FENCING_TOKEN + "\\n");
  const poll = setInterval(() => {
    if (!fs.existsSync(go)) return;
    clearInterval(poll);
    fs.appendFileSync(log, "end " + id + "\\n");
  }, 10);`;

/** The log's lines as events, in the order they were written. */
function events(text: string): { kind: "start" | "end"; id: string; token?: string }[] {
  return text.trim().split("\n").filter(Boolean).map((line) => {
    const [kind, id, token] = line.split(" ");
    return { kind: kind as "start" | "end", id: id as string, ...(token !== undefined && { token }) };
  });
}

/** The most commands that ran at once, by the log (each logs its end before its lock is released). */
function maxConcurrency(text: string): number {
  let running = 0;
  let most = 0;
  for (const e of events(text)) {
    running += e.kind === "start" ? 1 : -1;
    most = Math.max(most, running);
  }
  return most;
}

const count = (text: string, kind: "start" | "end"): number => events(text).filter((e) => e.kind === kind).length;

void describe("surelock exec --semaphore, --shared, --exclusive", () => {
  let server: RedisServer;
  let redis: string[];
  const side = new Side();
  /** The test's view of Redis, kept for the whole file (side's clients are closed after each test). */
  const probe = new Side();
  let state: (key: string) => Promise<LockState>;
  const scratch = new Scratch();

  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
    const client = probe.client(server);
    state = (key) => readLockState(client, new KeySpace("surelock"), key);
  });
  afterEach(async () => {
    await stopLeftovers();
    await side.close();
    await assertEveryKeyExpires(server);
  });
  after(async () => {
    await probe.close();
    scratch.cleanup();
  });

  void it("--semaphore --permits 2: five commands, never more than two at once, and two do run together", async () => {
    const log = scratch.path("sem.log");
    const go = scratch.path("sem.go");
    const runs = ["a", "b", "c", "d", "e"].map((id) =>
      new Cli(["exec", ...redis, "--key", "sem", "--semaphore", "--permits", "2", "--", ...nodeCommand(HOLD_UNTIL_GO, log, id, go)]));
    // Two run; the other three are queued in Redis, so they cannot start before a permit is freed.
    await eventually("two commands running and three queued", async () =>
      count(scratch.read("sem.log"), "start") === 2 && (await state("sem")).semaphore?.queue.length === 3);
    assert.equal(count(scratch.read("sem.log"), "start"), 2, scratch.read("sem.log"));

    const inspected = await cli(["inspect", ...redis, "sem", "--json"]);
    assert.equal(inspected.code, 0, inspected.stderr);
    const sem = (JSON.parse(inspected.stdout) as InspectReport).nodes[0] as { semaphore: LockState["semaphore"] };
    assert.equal(sem.semaphore?.limit, 2);
    assert.deepEqual(sem.semaphore?.holders.map((h) => h.mode), ["s", "s"]);
    const listed = await cli(["list", ...redis, "sem", "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual((JSON.parse(listed.stdout) as ListRow[]).map((r) => [r.kind, r.holders]), [["semaphore", 2]]);

    writeFileSync(go, "");
    const results = await Promise.all(runs.map((r) => r.result()));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const text = scratch.read("sem.log");
    assert.equal(count(text, "end"), 5, text);
    assert.equal(maxConcurrency(text), 2, text);
    const tokens = events(text).flatMap((e) => (e.token ? [e.token] : []));
    assert.equal(new Set(tokens).size, 5, `every permit has a fencing token of its own: ${tokens.join(" ")}`);
    assert.equal((await state("sem")).semaphore?.holders.length ?? 0, 0, "every permit was given back");
  });

  void it("--shared commands run together; an --exclusive one waits for them, and later readers wait for it", async () => {
    const log = scratch.path("rw.log");
    const go = scratch.path("rw.go");
    const exec = (mode: string, id: string) => new Cli(["exec", ...redis, "--key", "rw", mode, "--", ...nodeCommand(HOLD_UNTIL_GO, log, id, go)]);
    const readers = ["r1", "r2", "r3"].map((id) => exec("--shared", id));
    await eventually("three readers running at once", () => count(scratch.read("rw.log"), "start") === 3);

    const refused = await cli(["exec", ...redis, "--key", "rw", "--exclusive", "--timeout", "0", "--", ...nodeCommand("")]);
    assert.equal(refused.code, 75, refused.stderr);
    assert.match(refused.stderr, /timed out after .* waiting for write lock "rw" \(read by 3 readers: /);
    const listed = await cli(["list", ...redis, "rw", "--json"]);
    assert.deepEqual((JSON.parse(listed.stdout) as ListRow[]).map((r) => [r.kind, r.holders]), [["rw-read", 3]]);

    const writer = exec("--exclusive", "w");
    await eventually("the writer to queue", async () => (await state("rw")).rw?.queue.some((t) => t.mode === "w") === true);
    const late = exec("--shared", "r4");
    await eventually("the late reader to queue behind the writer", async () => (await state("rw")).rw?.queue.length === 2);

    // The mutex "rw" is another lock: a plain exec does not wait for the read-write lock's holders.
    const plain = await cli(["exec", ...redis, "--key", "rw", "--timeout", "0", "--", ...nodeCommand("")]);
    assert.equal(plain.code, 0, plain.stderr);

    writeFileSync(go, "");
    for (const r of await Promise.all([...readers, writer, late].map((r) => r.result()))) assert.equal(r.code, 0, r.stderr);
    const order = events(scratch.read("rw.log")).map((e) => `${e.kind} ${e.id}`);
    assert.deepEqual(order.slice(3, 6).sort(), ["end r1", "end r2", "end r3"], order.join(" | "));
    assert.deepEqual(order.slice(6), ["start w", "end w", "start r4", "end r4"], order.join(" | "));
  });

  void it("a full semaphore: --timeout 0 exits with 75 naming its holders, and another --permits exits with 2", async () => {
    const lease = await side.locks(server).semaphore("full", { permits: 1 }).acquire({ owner: "batch-7" });
    const marker = scratch.path("full.ran");
    const run = (permits: string) => cli(["exec", ...redis, "--key", "full", "--semaphore", "--permits", permits, "--timeout", "0", "--",
      ...nodeCommand(`require("fs").writeFileSync(process.argv[1], "")`, marker)]);
    const busy = await run("1");
    assert.equal(busy.code, 75, busy.stderr);
    assert.match(busy.stderr, /timed out after .* waiting for semaphore "full" \(1 of 1 permits taken, by batch-7\)/);
    const other = await run("2");
    assert.equal(other.code, 2, other.stderr);
    assert.match(other.stderr, /semaphore "full" is stored with 1 permit, and --permits 2 was given/);
    assert.equal(scratch.read("full.ran"), "", "the command never ran");
    assert.ok(await lease.isHeld());
    await lease.release();
    const afterwards = await run("2");
    assert.equal(afterwards.code, 2, `the number outlives the last holder (counterRetention): ${afterwards.stderr}`);
    assert.match(afterwards.stderr, /semaphore "full" is stored with 1 permit, and --permits 2 was given/);
  });

  void it("--owner: --exclusive shares the write side its owner holds; --shared reads beside it, under a token of its own", async () => {
    const lease = await side.locks(server).readWriteLock("owned").write().acquire({ owner: "deploy-9" });
    const run = (mode: string, owner: string) => cli(["exec", ...redis, "--key", "owned", mode, "--owner", owner, "--timeout", "0", "--",
      ...nodeCommand(`process.stdout.write(process.env.SURELOCK_FENCING_TOKEN)`)]);
    const writer = await run("--exclusive", "deploy-9");
    assert.equal(writer.code, 0, writer.stderr);
    assert.equal(writer.stdout, String(lease.fencingToken), "it ran at once, under the holder's token");
    const reader = await run("--shared", "deploy-9");
    assert.equal(reader.code, 0, reader.stderr);
    assert.match(reader.stdout, /^\d+$/);
    assert.notEqual(reader.stdout, String(lease.fencingToken), "a read hold of its own");
    const stranger = await run("--shared", "report-1");
    assert.equal(stranger.code, 75, stranger.stderr);
    assert.match(stranger.stderr, /waiting for read lock "owned" \(written by deploy-9, fencing token /);
    assert.ok(await lease.isHeld(), "the holder keeps the write side");
    await lease.release();
  });

  void it("SIGINT while --shared waits behind a writer exits with 130; --verbose names the read lock", async () => {
    const lease = await side.locks(server).readWriteLock("written").write().acquire();
    const marker = scratch.path("written.ran");
    const run = new Cli(["exec", ...redis, "--key", "written", "--shared", "--verbose", "--",
      ...nodeCommand(`require("fs").writeFileSync(process.argv[1], "")`, marker)]);
    await eventually("exec to wait", () => run.stderr.includes('waiting for read lock "written"'));
    run.kill("SIGINT");
    const r = await run.result();
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /interrupted by SIGINT while waiting for read lock "written"/);
    assert.equal(scratch.read("written.ran"), "");
    assert.ok(await lease.isHeld(), "the writer keeps its lock");
    await lease.release();
  });

  void it("a semaphore permit that is taken away stops the command with SIGTERM and exits with 76", async () => {
    const file = "sem-lost.log";
    const script = `
      const fs = require("fs");
      const file = process.argv[1];
      process.on("SIGTERM", () => { fs.appendFileSync(file, "SIGTERM\\n"); process.exit(0); });
      fs.appendFileSync(file, "started\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "sem-lost", "--semaphore", "--permits", "1", "--ttl", "1s", "--",
      ...nodeCommand(script, scratch.path(file))]);
    await scratch.waitFor(file, "started");
    const released = await cli(["release", ...redis, "sem-lost", "--force", "--kind", "semaphore"]);
    assert.equal(released.code, 0, released.stderr);

    const r = await run.result();
    assert.equal(r.code, 76, r.stderr);
    assert.match(r.stderr, /semaphore "sem-lost" was lost \(\w+\): stopping the command with SIGTERM/);
    assert.equal(scratch.read(file), "started\nSIGTERM\n");
  });
});

void describe("surelock exec --semaphore and --shared in quorum mode", () => {
  let servers: RedisServer[];
  const side = new Side();
  const scratch = new Scratch();

  before(async () => {
    servers = await startPrimaries(3);
  });
  after(async () => {
    await stopLeftovers();
    await side.close();
    scratch.cleanup();
    await Promise.all(servers.map((s) => s.stop()));
  });

  void it("holds a permit on every node; a third command finds the two permits taken and exits with 75", async () => {
    const args = servers.flatMap((s) => ["--redis", s.url]);
    const log = scratch.path("q.log");
    const go = scratch.path("q.go");
    const runs = ["a", "b"].map((id) =>
      new Cli(["exec", ...args, "--key", "q-sem", "--semaphore", "--permits", "2", "--", ...nodeCommand(HOLD_UNTIL_GO, log, id, go)]));
    await eventually("both commands running", () => count(scratch.read("q.log"), "start") === 2);
    const keys = new KeySpace("surelock");
    const clients = servers.map((s) => side.client(s));
    const holders = (): Promise<number[]> =>
      Promise.all(clients.map(async (c) => (await readLockState(c, keys, "q-sem")).semaphore?.holders.length ?? 0));
    await eventually("two holds on every node", async () => (await holders()).every((n) => n === 2));

    const third = await cli(["exec", ...args, "--key", "q-sem", "--semaphore", "--permits", "2", "--timeout", "0", "--", ...nodeCommand("")]);
    assert.equal(third.code, 75, third.stderr);
    assert.match(third.stderr, /waiting for semaphore "q-sem" \(2 of 2 permits taken/);

    writeFileSync(go, "");
    for (const r of await Promise.all(runs.map((r) => r.result()))) assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await holders(), [0, 0, 0]);
    for (const s of servers) await assertEveryKeyExpires(s);
  });

  void it("--shared commands read together on a majority; --exclusive finds them and exits with 75", async () => {
    const args = servers.flatMap((s) => ["--redis", s.url]);
    const log = scratch.path("q-rw.log");
    const go = scratch.path("q-rw.go");
    const readers = ["r1", "r2"].map((id) =>
      new Cli(["exec", ...args, "--key", "q-rw", "--shared", "--", ...nodeCommand(HOLD_UNTIL_GO, log, id, go)]));
    await eventually("both readers running at once", () => count(scratch.read("q-rw.log"), "start") === 2);
    const writer = await cli(["exec", ...args, "--key", "q-rw", "--exclusive", "--timeout", "0", "--", ...nodeCommand("")]);
    assert.equal(writer.code, 75, writer.stderr);
    assert.match(writer.stderr, /waiting for write lock "q-rw" \(read by 2 readers/);
    writeFileSync(go, "");
    for (const r of await Promise.all(readers.map((r) => r.result()))) assert.equal(r.code, 0, r.stderr);
    for (const s of servers) await assertEveryKeyExpires(s);
  });
});
