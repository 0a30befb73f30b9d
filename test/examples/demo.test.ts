// The flash-sale demo (examples/flash-sale): its numbers come from what happened, surelock with
// fencing never oversells, a naive lock killed mid-acquire leaves a lock without TTL, and no
// process it started outlives it, including when it is interrupted.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { countDoubleHolders, overlapSegments } from "../../examples/flash-sale/analysis.mjs";
import { runFlashSale, type FlashSaleResult } from "../../examples/flash-sale/run.mjs";

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

// Small bursts: a few seconds per run. Stock is large enough that the victim instance always
// reaches its fault point before the rest of the shop sells out.
const SMALL = { instances: 2, stock: 24, buyers: 70, connections: 12, ttlMs: 300, acquireTimeoutMs: 700 } as const;

void describe("flash-sale demo", () => {
  void it("counts double holders once per holder that overlapped a later one", () => {
    assert.equal(countDoubleHolders([{ start: 0, end: 10 }, { start: 10, end: 20 }, { start: 20, end: 30 }]), 0);
    // One paused holder (0..100) and three holders that came and went meanwhile: one double holder.
    const holds = [{ start: 0, end: 100 }, { start: 20, end: 30 }, { start: 40, end: 50 }, { start: 60, end: 70 }];
    assert.equal(countDoubleHolders(holds), 1);
    assert.deepEqual(overlapSegments(holds).map((s) => [s.start, s.end]), [[20, 30], [40, 50], [60, 70]]);
    assert.equal(countDoubleHolders([{ start: 0, end: 10 }, { start: 5, end: 15 }, { start: 8, end: 9 }]), 2);
  });

  for (const seed of [1, 2, 3]) {
    void it(`surelock+fencing: a holder paused past its TTL oversells nothing (seed ${seed})`, async () => {
      const result: FlashSaleResult = await runFlashSale({ ...SMALL, strategies: ["surelock+fencing"], seed });
      const [s] = result.strategies;
      assert.ok(s);
      assert.equal(s.fault?.kind, "pause");
      assert.equal(s.fault?.injected, true, "the holder was paused");
      assert.ok(s.events.some((e) => e.kind === "pause") && s.events.some((e) => e.kind === "resume"));
      assert.equal(s.oversold, 0);
      assert.equal(s.locksWithoutTtl, 0, `keys without TTL: ${s.keysWithoutTtl.join(", ")}`);
      // Every order is backed by a unit taken off the counter: no update was lost either.
      assert.equal(s.accepted + s.unitsLeft, SMALL.stock);
      assert.equal(s.lostUpdates, 0);
      assert.equal(s.statuses["200"], s.accepted, "each accepted purchase is one order in the log");
      assertAllGone(result.pids);
    });
  }

  void it("setnx-then-expire: an instance killed between SETNX and EXPIRE leaves a lock without TTL", async () => {
    const result = await runFlashSale({ ...SMALL, stock: 40, buyers: 50, strategies: ["setnx-then-expire"], seed: 5 });
    const [s] = result.strategies;
    assert.ok(s);
    assert.equal(s.fault?.injected, true, "the kill landed");
    assert.ok(s.events.some((e) => e.kind === "kill"));
    assert.equal(s.locksWithoutTtl, 1, "the dead instance's lock is still there, without TTL");
    assert.match(s.keysWithoutTtl[0] ?? "", /naive-lock$/);
    // Nobody sold after the kill: the stock is stuck, and buyers got timeouts.
    assert.ok(s.accepted < s.stock, `accepted ${s.accepted}`);
    assert.equal(s.unitsLeft, s.stock - s.accepted);
    assert.ok((s.statuses["503"] ?? 0) > 0, "buyers timed out waiting for the lock");
    assertAllGone(result.pids);
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
    const demo = spawn(process.execPath, [DEMO, "--strategy", "setnx-then-expire", "--no-svg", "--buyers", "60", "--connections", "12"], {
      stdio: ["ignore", "pipe", "pipe"],
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
