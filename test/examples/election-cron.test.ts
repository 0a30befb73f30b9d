// examples/election/cron.ts: three processes run one cron job; it runs on exactly one of them per
// slot, through a leader killed (SIGKILL) and a leader paused past its lease (SIGSTOP).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";

const CRON = fileURLToPath(new URL("../../examples/election/cron.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** One process of the example, with its output as lines a test can wait for. */
class CronProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  #waiters: (() => void)[] = [];

  constructor(url: string, args: readonly string[]) {
    this.child = spawn(process.execPath, ["--import", "tsx", CRON, ...args], { cwd: ROOT, env: { ...process.env, REDIS_URL: url }, stdio: ["ignore", "pipe", "inherit"] });
    let partial = "";
    this.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      this.lines.push(...parts);
      for (const wake of this.#waiters.splice(0)) wake();
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }

  get pid(): number {
    return this.child.pid as number;
  }

  count(what: string): number {
    return this.lines.filter((l) => l.includes(what)).length;
  }

  /** Resolves once `what` was printed `times` times in all. */
  async printed(what: string, times = 1): Promise<void> {
    while (this.count(what) < times) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}

describe("examples/election/cron.ts", () => {
  let server: RedisServer;
  const processes: CronProcess[] = [];
  before(async () => { server = await startStandalone(); });
  after(async () => {
    for (const p of processes) p.child.kill("SIGKILL");
    await server.stop();
  });

  it("3 processes, one job: each slot runs once, on the leader of the moment, through a kill and a pause", async () => {
    const args = ["--job", "report", "--every", "100", "--ttl", "500"];
    processes.push(...[0, 1, 2].map(() => new CronProcess(server.url, args)));
    const leaderOf = async (among: readonly CronProcess[]): Promise<CronProcess> =>
      within(10_000, Promise.race(among.map((p) => p.printed("leader (fencing token").then(() => p))), "a leader");

    const first = await leaderOf(processes);
    await within(5_000, first.printed("ran slot", 3));
    first.child.kill("SIGKILL");
    await first.exited;
    const rest = processes.filter((p) => p !== first);
    const second = await leaderOf(rest);
    const ranBefore = second.count("ran slot");
    await within(5_000, second.printed("ran slot", ranBefore + 3));
    // Paused for three leases: another process leads meanwhile; on waking, the paused one has lost.
    second.child.kill("SIGSTOP");
    const third = rest.find((p) => p !== second) as CronProcess;
    await within(5_000, third.printed("leader (fencing token"));
    await within(5_000, third.printed("ran slot", 3));
    second.child.kill("SIGCONT");
    await within(5_000, second.printed("lost the leadership"));
    for (const p of rest) p.child.kill("SIGTERM");
    assert.deepEqual(await within(10_000, Promise.all(rest.map((p) => p.exited))), [0, 0], "a graceful stop resigns and exits 0");

    const record = (await server.command("LRANGE", "{cron:report}:runs", 0, -1)) as string[];
    const slots = record.map((r) => Number(r.split(" ")[0]));
    for (let i = 1; i < slots.length; i++) assert.ok((slots[i] as number) > (slots[i - 1] as number), `slot ${slots[i]} after ${slots[i - 1]}: no slot ran twice`);
    const writers = new Set(record.map((r) => r.split(" ")[1]));
    assert.equal(writers.size, 3, "each of the three led in turn");
    const ran = processes.reduce((n, p) => n + p.count("ran slot"), 0);
    assert.equal(ran, record.length, "every run printed is on the record once");
    console.log(`# cron: ${record.length} runs by 3 leaders in turn, ${processes.reduce((n, p) => n + p.count("refused slot"), 0)} late writes refused`);
  });
});
