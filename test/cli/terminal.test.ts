// surelock exec at a terminal: what a command can do with the terminal in its own process group
// (the default) and with --foreground, checked in a real pseudo-terminal (util-linux `script`);
// and Ctrl-Z (SIGTSTP), which must stop the command together with surelock.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { assertEveryKeyExpires, Cli, eventually, holder, MAIN, nodeCommand, Scratch, sleep, within } from "./support.js";

after(stopAll);

/** A word for sh, quoted. */
const sh = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `args` (a command line of surelock) in a new pseudo-terminal, as if typed at a shell
 * prompt; `answer` is typed once the program printed `prompt`. Resolves with what the terminal
 * showed and the exit code.
 */
async function inTerminal(args: readonly string[], prompt: string, answer: string): Promise<{ screen: string; code: number | null }> {
  const line = [process.execPath, "--import", "tsx", MAIN, ...args].map(sh).join(" ");
  const env = { ...process.env };
  delete env.REDIS_URL;
  const child = spawn("script", ["--quiet", "--flush", "--return", "--command", line, "/dev/null"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let screen = "";
  let typed = false;
  const prompted = new Promise<void>((resolve) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      screen += chunk;
      if (!typed && screen.includes(prompt)) {
        typed = true;
        child.stdin.write(answer);
        resolve();
      }
    });
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => { screen += chunk; });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  try {
    await within(20_000, prompted, `the prompt ${JSON.stringify(prompt)} (screen so far: ${JSON.stringify(screen)})`);
    const code = await within(20_000, exited, `the command to end (screen: ${JSON.stringify(screen)})`);
    return { screen: screen.replace(/\r\n/g, "\n"), code };
  } finally {
    child.stdin.end();
    child.kill("SIGKILL");
  }
}

/** The state letter of a process in /proc (T: stopped), or "gone". */
function state(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  } catch {
    return "gone";
  }
}

void describe("surelock exec at a terminal", () => {
  let server: RedisServer;
  let redis: string[];
  const scratch = new Scratch();
  // Reports whether it has a controlling terminal, then reads one line from stdin.
  const probe = `
    if (exec 3</dev/tty) 2>/dev/null; then echo "tty: yes"; else echo "tty: no"; fi
    echo "session leader: $(ps -o sid= -p $$ | tr -d ' ')=$$"
    printf 'name? '
    read name && echo "read: $name"`;

  before(async () => {
    server = await startStandalone();
    redis = ["--redis", server.url];
  });
  afterEach(() => assertEveryKeyExpires(server));
  after(() => scratch.cleanup());

  void it("by default the command reads typed input from stdin, but has no controlling terminal (/dev/tty)", async () => {
    const { screen, code } = await inTerminal(["exec", ...redis, "--key", "tty-default", "--", "sh", "-c", probe], "name? ", "ada\n");
    assert.equal(code, 0, screen);
    assert.match(screen, /^read: ada$/m, "a read from the terminal succeeds: it is not stopped by SIGTTIN");
    assert.match(screen, /^tty: no$/m, "the command leads a session of its own, without a terminal");
    const [sid, pid] = /session leader: (\d+)=(\d+)/.exec(screen)?.slice(1) ?? [];
    assert.equal(sid, pid, screen);
  });

  void it("with --foreground the command has the terminal: /dev/tty opens (password prompts, editors, pagers work)", async () => {
    const { screen, code } = await inTerminal(["exec", ...redis, "--key", "tty-foreground", "--foreground", "--", "sh", "-c", probe], "name? ", "grace\n");
    assert.equal(code, 0, screen);
    assert.match(screen, /^read: grace$/m);
    assert.match(screen, /^tty: yes$/m);
  });

  void it("Ctrl-Z (SIGTSTP) stops the command with surelock; continued in time, both go on and the lock stays held", async () => {
    const ticks = scratch.path("short-stop.ticks");
    const go = scratch.path("short-stop.go");
    const script = `
      const fs = require("fs");
      const [ticks, go] = process.argv.slice(1);
      fs.writeFileSync(ticks, "pid " + process.pid + "\\n");
      const t = setInterval(() => { fs.appendFileSync(ticks, "tick\\n"); if (fs.existsSync(go)) clearInterval(t); }, 20);`;
    const run = new Cli(["exec", ...redis, "--key", "stopped-briefly", "--ttl", "3s", "--", ...nodeCommand(script, ticks, go)]);
    const pid = Number(/^pid (\d+)/.exec(await scratch.waitFor("short-stop.ticks", "tick"))?.[1]);
    const surelock = run.child.pid as number;

    run.kill("SIGTSTP");
    await eventually("surelock and the command to be stopped", () => state(surelock) === "T" && state(pid) === "T");
    const before = readFileSync(ticks, "utf8");
    await sleep(300); // proves the command did not run while stopped
    assert.equal(readFileSync(ticks, "utf8"), before, "no tick while stopped");

    run.kill("SIGCONT");
    await eventually("the command to tick again", () => readFileSync(ticks, "utf8").length > before.length);
    writeFileSync(go, "");
    const r = await run.result();
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await holder(server, "stopped-briefly"), {}, "released at the end");
  });

  void it("Ctrl-Z for longer than the lease: on SIGCONT the lease is found lost and the command is stopped (76)", async () => {
    const log = scratch.path("long-stop.log");
    const script = `
      const fs = require("fs");
      const log = process.argv[1];
      process.on("SIGTERM", () => { fs.appendFileSync(log, "SIGTERM\\n"); process.exit(0); });
      fs.writeFileSync(log, "pid " + process.pid + "\\n");
      setInterval(() => {}, 1000);`;
    const run = new Cli(["exec", ...redis, "--key", "stopped-too-long", "--ttl", "300ms", "--", ...nodeCommand(script, log)]);
    const pid = Number(/^pid (\d+)/.exec(await scratch.waitFor("long-stop.log", "pid"))?.[1]);
    run.kill("SIGTSTP");
    await eventually("the command to be stopped", () => state(pid) === "T");
    await eventually("the lock to expire in Redis", async () => Object.keys(await holder(server, "stopped-too-long")).length === 0);
    assert.equal(state(pid), "T", "the command stayed stopped while nobody renewed its lease");

    run.kill("SIGCONT");
    const r = await run.result();
    assert.equal(r.code, 76, r.stderr);
    assert.match(r.stderr, /lock "stopped-too-long" was lost \(expired\): stopping the command with SIGTERM/);
    assert.equal(readFileSync(log, "utf8").split("\n")[1], "SIGTERM");
  });
});
