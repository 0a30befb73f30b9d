// Quorum mode across processes: three workers, each in its own process with its own Surelock,
// increment one counter by read-modify-write under the lock while nodes are down.
import { describe, it, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { startPrimaries, startStandalone, stopAll, type RedisServer } from "../helpers/redis-topology.js";
import { assertEveryKeyExpires, restoreAll, within } from "./support.js";

const WORKER = fileURLToPath(new URL("./fixtures/counter-worker.ts", import.meta.url));
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const WORKERS = 3;
const ITERATIONS = 20;

let nodes: RedisServer[];
let counter: RedisServer;

before(async () => {
  [nodes, counter] = await Promise.all([startPrimaries(5), startStandalone()]);
});
after(stopAll);
afterEach(async () => {
  await restoreAll(nodes);
  await assertEveryKeyExpires(nodes);
});

interface Run {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stderr: string;
}

/** Starts the workers, lets them go together, and waits for all of them to exit. */
async function runWorkers(key: string): Promise<void> {
  const config = JSON.stringify({ nodePorts: nodes.map((n) => n.port), counterPort: counter.port, key, iterations: ITERATIONS, ttl: 5_000 });
  const runs: Run[] = [];
  try {
    const readies: Promise<void>[] = [];
    for (let i = 0; i < WORKERS; i++) {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER, config], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
      const run: Run = { child, exited: once(child, "exit").then(([code]) => code as number | null), stderr: "" };
      child.stderr?.on("data", (chunk: Buffer) => { run.stderr += chunk.toString(); });
      readies.push(new Promise<void>((resolve, reject) => {
        let out = "";
        child.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes("ready\n")) resolve();
        });
        void run.exited.then((code) => reject(new Error(`worker exited (${code}) before it was ready: ${run.stderr}`)));
      }));
      runs.push(run);
    }
    await within(30_000, Promise.all(readies), "the workers to start");
    await counter.command("RPUSH", `${key}:go`, ...Array.from({ length: WORKERS }, () => "go"));
    const codes = await within(45_000, Promise.all(runs.map((r) => r.exited)), "the workers to finish");
    codes.forEach((code, i) => assert.equal(code, 0, `worker ${i} failed: ${runs[i]?.stderr}`));
  } finally {
    for (const r of runs) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
  }
}

/** The tokens the workers logged, in critical-section order. */
async function loggedTokens(key: string): Promise<bigint[]> {
  const list = await counter.command("LRANGE", `${key}:tokens`, 0, -1);
  assert.ok(Array.isArray(list));
  return list.map((t) => BigInt(String(t)));
}

function assertStrictlyIncreasing(tokens: readonly bigint[]): void {
  for (let i = 1; i < tokens.length; i++) {
    assert.ok((tokens[i] as bigint) > (tokens[i - 1] as bigint), `token #${i} (${tokens[i]}) is not above #${i - 1} (${tokens[i - 1]})`);
  }
}

void describe("quorum mode: mutual exclusion across processes", () => {
  void it("three processes never overlap with one node down, then with two down: exact count, strictly increasing tokens", async () => {
    const key = "mx:counter";
    const total = WORKERS * ITERATIONS;

    await nodes[4]?.kill();
    await runWorkers(key);
    assert.equal(await counter.command("GET", `${key}:count`), String(total));
    const first = await loggedTokens(key);
    assert.equal(first.length, total);
    assertStrictlyIncreasing(first);

    await nodes[3]?.kill();
    await counter.command("DEL", `${key}:go`);
    await runWorkers(key);
    assert.equal(await counter.command("GET", `${key}:count`), String(2 * total));
    const all = await loggedTokens(key);
    assert.equal(all.length, 2 * total);
    assertStrictlyIncreasing(all);
  });
});
