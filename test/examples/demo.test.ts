// The flash-sale demo (examples/flash-sale): the outcome of every strategy is the same in kind
// for every seed (which rows oversell, jam or stay exact, and through which event), its numbers
// come from what happened, it writes its files outside the tracked tree, and no process it
// started outlives it, including when it is interrupted.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { countDoubleHolders, overlapSegments } from "../../examples/flash-sale/analysis.mjs";
import { findNginx } from "../../examples/flash-sale/nginx.mjs";
import { runFlashSale, type StrategyName, type StrategyResult } from "../../examples/flash-sale/run.mjs";
import { within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DEMO = fileURLToPath(new URL("../../examples/demo.mjs", import.meta.url));
const onLinux = process.platform === "linux";

/** Fields of /proc/<pid>/stat after the command name (Linux), or null if the process is gone. */
function statOf(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}
const parentOf = (pid: number): number | null => { const f = statOf(pid); return f ? Number(f[1]) : null; };
/** When the process started (clock ticks since boot): with the pid, it names one process for good. */
const startOf = (pid: number): string | null => statOf(pid)?.[19] ?? null;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** None of `pids` (started by this process) still runs; a pid reused by an unrelated process is fine. */
function assertAllGone(pids: readonly number[]): void {
  assert.ok(pids.length > 0, "the run reported the processes it started");
  for (const pid of pids) {
    if (!alive(pid)) continue;
    if (onLinux) assert.notEqual(parentOf(pid), process.pid, `process ${pid} is still running`);
    else assert.fail(`process ${pid} is still running`);
  }
}

/** Processes whose parent is `parent` (Linux). */
function childrenOf(parent: number): number[] {
  return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => parentOf(pid) === parent);
}

/** `git status` of the checkout, ignored files excluded: what a fresh clone would show as dirty. */
function gitStatus(): string {
  const git = spawnSync("git", ["status", "--porcelain=v1", "--untracked-files=all"], { cwd: ROOT, encoding: "utf8" });
  assert.equal(git.status, 0, `git status failed: ${git.stderr}`);
  return git.stdout;
}

/** Runs examples/demo.mjs to its end; resolves with its exit code and output. */
async function runDemo(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const demo = spawn(process.execPath, [DEMO, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  demo.stdout.on("data", (chunk: Buffer) => { stdout += chunk; });
  demo.stderr.on("data", (chunk: Buffer) => { stderr += chunk; });
  const code = await within(60_000, new Promise<number | null>((resolve) => demo.once("exit", (c) => resolve(c))), "the demo")
    .finally(() => demo.kill("SIGKILL"));
  return { code, stdout, stderr };
}

// Small bursts: a few seconds per strategy. The stock is large enough that the victim reaches its
// fault point long before the shop sells out, and the buyers many enough that it always sells out.
const SMALL = { instances: 2, stock: 24, buyers: 70, connections: 12, ttlMs: 400, acquireTimeoutMs: 700 } as const;
const SMALL_ARGS = ["--stock", "24", "--buyers", "70", "--connections", "12", "--ttl", "400"];

/** What each strategy's fault must do, in every run. */
const OUTCOMES: Record<StrategyName, (s: StrategyResult) => void> = {
  none(s) {
    // No lock: the writes trample each other, fault or not.
    assert.ok(s.staleWrites > 0 && s.salesUndone > 0 && s.oversold > 0, `stale ${s.staleWrites}, undone ${s.salesUndone}`);
    assert.equal(s.doubleHolders, null, "no lock, no holders");
    assert.equal(s.locksWithoutTtl, 0);
  },
  "setnx-then-expire"(s) {
    assert.equal(s.fault?.kind, "kill");
    assert.ok(s.events.some((e) => e.kind === "kill"));
    assert.equal(s.locksWithoutTtl, 1, "the dead instance's lock is still there, without TTL");
    assert.match(s.keysWithoutTtl[0] ?? "", /naive-lock$/);
    // Nobody sold after the kill: the stock is stuck, and buyers got timeouts.
    assert.ok(s.accepted < s.stock, `accepted ${s.accepted}`);
    assert.equal(s.unitsLeft, s.stock - s.accepted);
    assert.ok((s.statuses["503"] ?? 0) > 0, "buyers timed out waiting for the lock");
    assert.equal(s.staleWrites, 0);
    assert.equal(s.salesUndone, 0);
    assert.equal(s.oversold, 0);
  },
  "del-without-check"(s) {
    // Its late DEL freed the lock of the holder held at its write, someone else took it and wrote:
    // at least that holder's write is stale. Every bare DEL after it can free a lock someone holds
    // again, so how many more follow varies.
    assert.equal(s.fault?.held?.point, "before-write");
    assert.ok(s.events.some((e) => e.kind === "held" && e.why === "another holder took its lock and wrote"));
    assert.ok(s.staleWrites >= 1 && s.salesUndone >= 1, `stale ${s.staleWrites}, undone ${s.salesUndone}`);
    assert.ok((s.doubleHolders ?? 0) >= 2, `double holders ${s.doubleHolders}`);
    assert.equal(s.oversold, s.salesUndone);
    assert.equal(s.locksWithoutTtl, 0);
  },
  "get-then-del"(s) {
    // One for the injected pause: the woken holder deleted one lock. Every later release has the
    // same window between its GET and its DEL, which only a process stalled past its ttl there
    // (an overloaded machine) hits again; each such hit adds one of each.
    assert.equal(s.fault?.held?.point, "before-write");
    assert.ok(s.staleWrites >= 1, `stale ${s.staleWrites}`);
    assert.equal(s.salesUndone, s.staleWrites);
    assert.equal(s.oversold, s.salesUndone);
    assert.ok((s.doubleHolders ?? 0) >= 2, `double holders ${s.doubleHolders}: the woken holder, and the holder whose lock it deleted`);
    assert.equal(s.locksWithoutTtl, 0);
  },
  surelock(s) {
    // The lease ran out during the pause, so nobody believed it held the lock twice; the SET the
    // paused holder had decided on still landed, while the next holder held the lock, before it read.
    const v = s.fault?.victim;
    assert.equal(s.fault?.held?.point, "before-read");
    assert.equal(v?.heldAtWrite, false, "lease.held said no at the stale write");
    assert.equal(v?.staleWrite, true);
    assert.ok((v?.undid ?? 0) >= 1, "the stale SET undid the sales made during the pause");
    assert.equal(s.staleWrites, 1);
    assert.equal(s.salesUndone, v?.undid);
    assert.equal(s.oversold, s.salesUndone);
    assert.equal(s.doubleHolders, 0);
    assert.equal(s.staleWritesRefused, 0, "its lease check ran before the pause, and passed");
    assert.equal(s.locksWithoutTtl, 0);
  },
  "surelock+fencing"(s) {
    assert.equal(s.fault?.held?.point, "before-read");
    assert.equal(s.fault?.victim?.outcome, "stale-refused", "the guard refused the paused holder's write");
    assert.equal(s.staleWritesRefused, 1);
    assert.equal(s.staleWrites, 0);
    assert.equal(s.salesUndone, 0);
    assert.equal(s.oversold, 0);
    assert.equal(s.accepted, s.stock);
    assert.equal(s.doubleHolders, 0);
    assert.equal(s.locksWithoutTtl, 0);
  },
};

void describe("flash-sale demo", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  void it("counts a double holder for each holder that went on believing after another's acquire", () => {
    assert.equal(countDoubleHolders([{ start: 0, end: 10 }, { start: 10, end: 20 }, { start: 20, end: 30 }]), 0);
    // A naive holder paused with its lock (0..100) and three holders that came and went meanwhile:
    // it is the one double holder; the others got the lock from Redis.
    const paused = [{ start: 0, end: 100 }, { start: 20, end: 30 }, { start: 40, end: 50 }, { start: 60, end: 70 }];
    assert.equal(countDoubleHolders(paused), 1);
    assert.deepEqual(overlapSegments(paused).map((s) => [s.start, s.end]), [[20, 30], [40, 50], [60, 70]]);
    // A surelock holder's belief ends at its last look that said "held", before its pause.
    assert.equal(countDoubleHolders([{ start: 0, end: 12 }, { start: 20, end: 30 }, { start: 40, end: 50 }]), 0);
    assert.equal(countDoubleHolders([{ start: 0, end: 10 }, { start: 5, end: 15 }, { start: 8, end: 9 }]), 2);
  });

  for (const seed of [1, 2, 3]) {
    void it(`every strategy's fault does the same damage in kind (seed ${seed})`, async () => {
      const result = await runFlashSale({ ...SMALL, seed, redisUrl: server.url });
      assert.deepEqual(result.strategies.map((s) => s.strategy), Object.keys(OUTCOMES));
      for (const s of result.strategies) {
        assert.equal(s.fault?.injected, true, `${s.strategy}: the fault landed`);
        // Without a lock, every buyer may get a unit while the counter still shows some left.
        if (s.strategy !== "setnx-then-expire" && s.strategy !== "none") assert.equal(s.unitsLeft, 0, `${s.strategy}: the sale sold out`);
        // Every accepted purchase is one order in the log, and every order is sold or undone.
        if (s.strategy === "setnx-then-expire") {
          // Its fault kills an instance: a purchase it had logged may never have been answered.
          assert.ok((s.statuses["200"] ?? 0) <= s.accepted, `${s.strategy}: no answered purchase without its order`);
        } else assert.equal(s.statuses["200"], s.accepted, `${s.strategy}: one order per accepted purchase`);
        assert.equal(s.accepted, s.stock - s.unitsLeft + s.salesUndone, `${s.strategy}: orders = units taken + sales undone`);
        try {
          OUTCOMES[s.strategy](s);
        } catch (error) {
          (error as Error).message = `${s.strategy} (seed ${seed}): ${(error as Error).message}`;
          throw error;
        }
      }
      assertAllGone(result.pids);
      assert.deepEqual(await server.command("KEYS", "surelock-demo:*"), [], "the run removed its keys");
    });
  }

  void it("npm run demo leaves a clean tree: its files go to .tmp/demo/, and it says so", async () => {
    const before = gitStatus();
    const { code, stdout, stderr } = await runDemo(["--strategy", "surelock+fencing", ...SMALL_ARGS], { REDIS_URL: server.url });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /Written: \.tmp\/demo\/output\.txt \(this text\) and \.tmp\/demo\/timeline\.svg/);
    // It says what stood in front of the instances: nginx where the machine has it.
    assert.match(stdout, findNginx() ? /2 shop instances behind nginx \d+\.\d+/ : /2 shop instances behind the demo's own round-robin balancer/);
    const written = readFileSync(join(ROOT, ".tmp/demo/output.txt"), "utf8");
    assert.match(written, /^surelock\+fencing +24 +0 +0 +0 +1 +0 +0 /m, "output.txt holds the table as printed");
    assert.match(readFileSync(join(ROOT, ".tmp/demo/timeline.svg"), "utf8"), /^<svg /);
    assert.equal(gitStatus(), before, "the demo changed no tracked file and left no untracked one");
  });

  void it("the balancer: nginx as an unprivileged child where installed (stopped with the run), the demo's own otherwise", async () => {
    const one = { ...SMALL, strategies: ["surelock+fencing"] as StrategyName[], redisUrl: server.url };
    const own = await runFlashSale({ ...one, balancer: "own" });
    assert.equal(own.balancer, "the demo's own round-robin balancer");
    assert.equal(own.strategies[0]?.accepted, SMALL.stock);
    // A machine without nginx: auto falls back, and asking for nginx says why it cannot.
    const saved = process.env.NGINX;
    process.env.NGINX = join(tmpdir(), "no-such-nginx");
    try {
      assert.equal((await runFlashSale({ ...one, balancer: "auto" })).balancer, "the demo's own round-robin balancer");
      await assert.rejects(runFlashSale({ ...one, balancer: "nginx" }), /no nginx found/);
    } finally {
      if (saved === undefined) delete process.env.NGINX;
      else process.env.NGINX = saved;
    }
    const installed = findNginx();
    if (installed) {
      const pids: [number, string][] = [];
      const behind = await runFlashSale({ ...one, balancer: "nginx", onChild: (pid, name) => pids.push([pid, name]) });
      assert.match(behind.balancer, /^nginx \d+\.\d+/);
      assert.equal(behind.strategies[0]?.accepted, SMALL.stock, "exactly the stock sold through nginx");
      assert.ok(pids.some(([, name]) => name === "nginx"), "nginx ran as the run's own child");
      assertAllGone(pids.map(([pid]) => pid));
    } else {
      assert.equal((await runFlashSale({ ...one })).balancer, "the demo's own round-robin balancer");
    }
  });

  void it("--out DIR writes both files there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "surelock-demo-test-"));
    try {
      const { code, stderr } = await runDemo(["--strategy", "get-then-del", "--out", dir, ...SMALL_ARGS], { REDIS_URL: server.url });
      assert.equal(code, 0, stderr);
      assert.ok(existsSync(join(dir, "output.txt")) && existsSync(join(dir, "timeline.svg")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it("an aborted run stops every process it started", async () => {
    const pids: number[] = [];
    const controller = new AbortController();
    const run = runFlashSale({
      ...SMALL, strategies: ["setnx-then-expire"], seed: 2,
      onChild: (pid) => pids.push(pid),
      onProgress: (p) => { if (p.note?.startsWith("SIGKILL")) controller.abort(new Error("test abort")); },
      signal: controller.signal,
    });
    await assert.rejects(run, /test abort/);
    assert.ok(pids.length >= 3, "redis-server and two instances were started");
    assertAllGone(pids);
  });

  void it("Ctrl-C on npm run demo stops every process it started", { skip: !onLinux && "needs /proc" }, async () => {
    const demo = spawn(process.execPath, [DEMO, "--strategy", "setnx-then-expire", "--no-files", "--buyers", "60", "--connections", "12"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, REDIS_URL: "" }, // its own throwaway redis-server, which must go too
    });
    let stderr = "";
    demo.stderr.on("data", (chunk: Buffer) => { stderr += chunk; });
    const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));
    const pid = demo.pid;
    assert.ok(pid !== undefined);
    // Wait until redis-server and both instances run, then interrupt.
    const seen = new Map<number, string | null>();
    const deadline = Date.now() + 20_000;
    while (seen.size < 3 && Date.now() < deadline) {
      for (const child of childrenOf(pid)) if (!seen.has(child)) seen.set(child, startOf(child));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(seen.size >= 3, `the demo started its processes (saw ${seen.size})`);
    demo.kill("SIGINT");
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /stopping every process/);
    // Orphans would live on under another parent: compare start times, not parents.
    for (const [child, started] of seen) {
      assert.ok(startOf(child) === null || startOf(child) !== started, `process ${child} outlived the demo`);
    }
  });
});
