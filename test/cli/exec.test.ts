// surelock exec: runs a command under the lock, passes its exit code on, never lets two
// commands overlap, gives up at --timeout, and stops the command when the lease is lost.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import { startPrimaries, startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { KeySpace } from "../../src/keys.js";
import type { InspectReport } from "../../src/cli/inspect.js";
import { alive, assertEveryKeyExpires, Cli, cli, eventually, holder, nodeCommand, Scratch, Side, stopLeftovers } from "./support.js";

after(stopAll);

void describe("surelock exec", () => {
  let server: RedisServer;
  let redis: string[];
  const side = new Side();
  const scratch = new Scratch();

  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
  });
  afterEach(async () => {
    await stopLeftovers();
    await side.close();
    await assertEveryKeyExpires(server);
  });
  after(() => scratch.cleanup());

  void it("runs the command with the lock held, passes SURELOCK_KEY and SURELOCK_FENCING_TOKEN, and exits with its code", async () => {
    const script = `
      process.stdout.write(process.env.SURELOCK_KEY + " " + process.env.SURELOCK_FENCING_TOKEN);
      process.exit(3);`;
    const r = await cli(["exec", ...redis, "--key", "exit-code", "--", ...nodeCommand(script)]);
    assert.equal(r.code, 3, r.stderr);
    const [key, token] = r.stdout.split(" ");
    assert.equal(key, "exit-code");
    assert.match(token ?? "", /^\d+$/);
    assert.deepEqual(await holder(server, "exit-code"), {}, "the lock is released once the command exited");
  });

  void it("holds the lock in Redis while the command runs, under the token it was given", async () => {
    const script = `
      const fs = require("fs");
      fs.writeFileSync(process.argv[1], process.env.SURELOCK_FENCING_TOKEN + "\\n");
      const go = setInterval(() => { if (fs.existsSync(process.argv[2])) { clearInterval(go); } }, 10);`;
    const run = new Cli(["exec", ...redis, "--key", "held", "--", ...nodeCommand(script, scratch.path("held.token"), scratch.path("held.go"))]);
    const token = (await scratch.waitFor("held.token", "\n")).trim();
    const h = await holder(server, "held");
    assert.equal(h.t, token);
    assert.equal(h.n, "1");
    const pttl = Number(await server.command("PTTL", new KeySpace("surelock").exclusive("held").lock));
    assert.ok(pttl > 0 && pttl <= 30_000, `PTTL ${pttl}`);
    writeFileSync(scratch.path("held.go"), "");
    assert.equal((await run.result()).code, 0);
    assert.deepEqual(await holder(server, "held"), {});
  });

  void it("a command ended by a signal exits with 128 + the signal number", async () => {
    const r = await cli(["exec", ...redis, "--key", "signalled", "--", ...nodeCommand(`process.kill(process.pid, "SIGTERM")`)]);
    assert.equal(r.code, 128 + 15, r.stderr);
  });

  void it("runs the command in a process group of its own, or in surelock's with --foreground", async () => {
    const script = `process.stdout.write(require("fs").readFileSync("/proc/self/stat", "utf8"))`;
    const own = await cli(["exec", ...redis, "--key", "group", "--", ...nodeCommand(script)]);
    assert.equal(own.code, 0, own.stderr);
    const child = processGroup(own.stdout);
    assert.equal(child.pgrp, child.pid, "the command leads its own group");

    const foreground = await cli(["exec", ...redis, "--key", "group", "--foreground", "--", ...nodeCommand(script)]);
    assert.equal(foreground.code, 0, foreground.stderr);
    // surelock was started by this process in its group, and the command stays in it.
    assert.equal(processGroup(foreground.stdout).pgrp, processGroup(readFileSync("/proc/self/stat", "utf8")).pgrp);
  });

  void it("a command that does not exist exits with 127 and leaves the lock free", async () => {
    const r = await cli(["exec", ...redis, "--key", "missing", "--", "surelock-no-such-command-here"]);
    assert.equal(r.code, 127);
    assert.match(r.stderr, /command not found: "surelock-no-such-command-here"/);
    assert.deepEqual(await holder(server, "missing"), {});
  });

  void it("--owner shares the lock with its holder of the same owner: same token, and the holder keeps it", async () => {
    const lease = await side.locks(server).mutex("shared-owner").acquire({ owner: "job-17" });
    const r = await cli(["exec", ...redis, "--key", "shared-owner", "--owner", "job-17", "--timeout", "0", "--",
      ...nodeCommand(`process.stdout.write(process.env.SURELOCK_FENCING_TOKEN)`)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, String(lease.fencingToken), "the command ran at once, under the holder's token");
    const after = await holder(server, "shared-owner");
    assert.deepEqual([after.o, after.n], ["job-17", "1"], "exec gave back its own entry only");
    assert.ok(await lease.isHeld());
    await lease.release();

    const other = await side.locks(server).mutex("shared-owner").acquire({ owner: "job-18" });
    const refused = await cli(["exec", ...redis, "--key", "shared-owner", "--owner", "job-17", "--timeout", "0", "--", ...nodeCommand("")]);
    assert.equal(refused.code, 75, "another owner's lock is not shared");
    await other.release();
  });

  void it("two commands on one key never overlap", async () => {
    const log = scratch.path("overlap.log");
    const script = `
      const fs = require("fs");
      const [file, id] = process.argv.slice(1);
      fs.appendFileSync(file, "start " + id + "\\n");
      setTimeout(() => fs.appendFileSync(file, "end " + id + "\\n"), 150);`;
    const runs = ["a", "b", "c"].map((id) => new Cli(["exec", ...redis, "--key", "overlap", "--", ...nodeCommand(script, log, id)]));
    const results = await Promise.all(runs.map((r) => r.result()));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const lines = scratch.read("overlap.log").trim().split("\n");
    assert.equal(lines.length, 6, lines.join(" | "));
    for (let i = 0; i < lines.length; i += 2) {
      const id = lines[i]?.split(" ")[1];
      assert.deepEqual([lines[i], lines[i + 1]], [`start ${id}`, `end ${id}`], `interleaved: ${lines.join(" | ")}`);
    }
  });

  void it("--timeout on a held lock exits with 75, names the holder and does not run the command", async () => {
    const lease = await side.locks(server).mutex("busy").acquire();
    const marker = scratch.path("busy.ran");
    const run = (timeout: string) =>
      cli(["exec", ...redis, "--key", "busy", "--timeout", timeout, "--", ...nodeCommand(`require("fs").writeFileSync(process.argv[1], "")`, marker)]);
    for (const timeout of ["300ms", "0"]) {
      const r = await run(timeout);
      assert.equal(r.code, 75, r.stderr);
      assert.match(r.stderr, /timed out after .* waiting for lock "busy"/);
      assert.ok(r.stderr.includes(lease.owner), `names the holder: ${r.stderr}`);
      assert.ok(r.stderr.includes(String(lease.fencingToken)), r.stderr);
    }
    assert.equal(scratch.read("busy.ran"), "", "the command never ran");
    assert.equal((await holder(server, "busy")).o, lease.owner, "the holder keeps its lock");
    await lease.release();
  });

  void it("a lost lease stops the command with SIGTERM and exits with 76", async () => {
    const file = "lost.log";
    const script = `
      const fs = require("fs");
      const file = process.argv[1];
      process.on("SIGTERM", () => { fs.appendFileSync(file, "SIGTERM\\n"); process.exit(0); });
      fs.appendFileSync(file, "started\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "lost", "--ttl", "1s", "--verbose", "--", ...nodeCommand(script, scratch.path(file))]);
    await scratch.waitFor(file, "started");
    // Another client force-releases the lock and takes it.
    const released = await cli(["release", ...redis, "lost", "--force"]);
    assert.equal(released.code, 0, released.stderr);
    const thief = await side.locks(server).mutex("lost").acquire({ timeout: 5_000 });

    const r = await run.result();
    assert.equal(r.code, 76, r.stderr);
    assert.match(r.stderr, /lock "lost" was lost \((taken|expired)\): stopping the command with SIGTERM/);
    assert.equal(r.stderr.match(/\((taken|expired)\)/g)?.length, 1, `--verbose reports the loss once: ${r.stderr}`);
    assert.equal(scratch.read(file), "started\nSIGTERM\n");
    assert.equal((await holder(server, "lost")).o, thief.owner, "the new holder's lock is untouched");
    await thief.release();
  });

  void it("a command that ignores SIGTERM is killed, with the processes it started, after --kill-after", async () => {
    const file = "stubborn.log";
    const script = `
      const fs = require("fs");
      const file = process.argv[1];
      process.on("SIGTERM", () => fs.appendFileSync(file, "ignored SIGTERM\\n"));
      const grandchild = require("child_process").spawn(process.execPath,
        ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
      fs.appendFileSync(file, "started " + process.pid + " " + grandchild.pid + "\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "stubborn", "--ttl", "1s", "--kill-after", "300ms", "--", ...nodeCommand(script, scratch.path(file))]);
    const started = await scratch.waitFor(file, "started");
    const [, child, grandchild] = started.trim().split(" ").map(Number);
    await server.command("DEL", new KeySpace("surelock").exclusive("stubborn").lock);

    const r = await run.result();
    assert.equal(r.code, 76, r.stderr);
    assert.match(scratch.read(file), /ignored SIGTERM/);
    await eventually("the command and its child to be gone", () => !alive(child as number) && !alive(grandchild as number), 5_000);
  });

  void it("a Redis that stops answering for longer than the lease stops the command and exits with 76", async () => {
    const file = "paused.log";
    const script = `
      const fs = require("fs");
      fs.appendFileSync(process.argv[1], "started\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "paused", "--ttl", "1s", "--", ...nodeCommand(script, scratch.path(file))]);
    await scratch.waitFor(file, "started");
    await server.pause();
    try {
      const r = await run.result(10_000);
      assert.equal(r.code, 76, r.stderr);
      assert.match(r.stderr, /lock "paused" was lost \(unreachable\)/);
    } finally {
      await server.resume();
    }
  });

  void it("SIGTERM to exec is passed on to the command; the lock is released after it exits", async () => {
    const file = "forward.log";
    const script = `
      const fs = require("fs");
      const file = process.argv[1];
      process.on("SIGTERM", () => { fs.appendFileSync(file, "got SIGTERM\\n"); process.exit(7); });
      fs.appendFileSync(file, "started\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "forward", "--", ...nodeCommand(script, scratch.path(file))]);
    await scratch.waitFor(file, "started");
    assert.ok((await holder(server, "forward")).o, "held while the command runs");
    run.kill("SIGTERM");
    const r = await run.result();
    assert.equal(r.code, 7, r.stderr);
    assert.equal(scratch.read(file), "started\ngot SIGTERM\n");
    assert.deepEqual(await holder(server, "forward"), {});
  });

  void it("SIGINT while waiting for the lock exits with 130 and never runs the command", async () => {
    const lease = await side.locks(server).mutex("interrupted").acquire();
    const marker = scratch.path("interrupted.ran");
    const run = new Cli(["exec", ...redis, "--key", "interrupted", "--verbose", "--", ...nodeCommand(`require("fs").writeFileSync(process.argv[1], "")`, marker)]);
    await eventually("exec to wait", () => run.stderr.includes('waiting for lock "interrupted"'));
    run.kill("SIGINT");
    const r = await run.result();
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /interrupted by SIGINT while waiting for lock "interrupted"/);
    assert.equal(scratch.read("interrupted.ran"), "");
    assert.equal((await holder(server, "interrupted")).o, lease.owner);
    await lease.release();
  });

  void it("an unreachable Redis exits with 69 without running the command", async () => {
    const port = await closedPort();
    const r = await cli(["exec", "--redis", `redis://127.0.0.1:${port}`, "--key", "k", "--", ...nodeCommand("process.exit(0)")]);
    assert.equal(r.code, 69, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot connect to redis://127\\.0\\.0\\.1:${port}`));
  });

  void it("REDIS_URL is used when --redis is not given", async () => {
    const r = await cli(["exec", "--key", "env-url", "--", ...nodeCommand("process.exit(4)")], { REDIS_URL: server.url });
    assert.equal(r.code, 4, r.stderr);
  });
});

void describe("surelock exec in quorum mode", () => {
  let servers: RedisServer[];
  const scratch = new Scratch();

  before(async () => {
    servers = await startPrimaries(3);
  });
  afterEach(stopLeftovers);
  after(async () => {
    scratch.cleanup();
    await Promise.all(servers.map((s) => s.stop()));
  });

  void it("with three --redis URLs, holds the lock on every node while the command runs", async () => {
    const script = `
      const fs = require("fs");
      fs.writeFileSync(process.argv[1], process.env.SURELOCK_FENCING_TOKEN + "\\n");
      const go = setInterval(() => { if (fs.existsSync(process.argv[2])) clearInterval(go); }, 10);`;
    const args = servers.flatMap((s) => ["--redis", s.url]);
    const run = new Cli(["exec", ...args, "--key", "quorum", "--", ...nodeCommand(script, scratch.path("token"), scratch.path("go"))]);
    const token = (await scratch.waitFor("token", "\n")).trim();
    // One hold on every node; each node's counter was raised to the token the majority chose (a
    // hold's own token on a node is never rewritten).
    const holds = await Promise.all(servers.map((s) => holder(s, "quorum")));
    assert.equal(new Set(holds.map((h) => h.h)).size, 1, "the same hold on every node");
    for (const s of servers) assert.equal(await s.command("HGET", "surelock:{quorum}:lock", "c"), token, `node ${s.port}`);
    writeFileSync(scratch.path("go"), "");
    assert.equal((await run.result()).code, 0);
    for (const s of servers) assert.deepEqual(await holder(s, "quorum"), {});
  });

  void it("runs with one of three nodes down, which inspect then reports with exit code 69", async () => {
    const [a, b, c] = await startPrimaries(3) as [RedisServer, RedisServer, RedisServer];
    await c.stop();
    const args = [a, b, c].flatMap((s) => ["--redis", s.url]);
    const script = `
      const fs = require("fs");
      fs.writeFileSync(process.argv[1], "started\\n");
      const go = setInterval(() => { if (fs.existsSync(process.argv[2])) clearInterval(go); }, 10);`;
    const run = new Cli(["exec", ...args, "--key", "minority-down", "--", ...nodeCommand(script, scratch.path("md.started"), scratch.path("md.go"))]);
    await scratch.waitFor("md.started", "started");
    assert.match(run.stderr, new RegExp(`cannot connect to redis://127\\.0\\.0\\.1:${c.port}.*going on with the other nodes`));

    const inspected = await cli(["inspect", ...args, "minority-down", "--json"]);
    assert.equal(inspected.code, 69);
    const report = JSON.parse(inspected.stdout) as InspectReport;
    assert.equal(report.locked, true);
    assert.deepEqual(report.nodes.map((n) => "error" in n), [false, false, true]);
    writeFileSync(scratch.path("md.go"), "");
    assert.equal((await run.result()).code, 0);
    await Promise.all([a.stop(), b.stop()]);
  });

  void it("fails with 69 when a majority of the nodes is down", async () => {
    const [a, b, c] = await startPrimaries(3);
    await b?.stop();
    await c?.stop();
    const args = [a, b, c].flatMap((s) => ["--redis", (s as RedisServer).url]);
    const r = await cli(["exec", ...args, "--key", "no-quorum", "--", ...nodeCommand("process.exit(0)")]);
    assert.equal(r.code, 69, r.stderr);
    await a?.stop();
  });
});

/** pid and process group id from a /proc/<pid>/stat line. */
function processGroup(stat: string): { pid: number; pgrp: number } {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pid: Number(stat.split(" ")[0]), pgrp: Number(fields[2]) };
}

/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
