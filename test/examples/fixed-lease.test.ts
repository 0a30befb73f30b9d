// examples/fixed-lease/time-boxed.ts: a batch job that works for its fixed lease and stops there;
// the next run goes on from its cursor; a run started meanwhile with --timeout 0 is turned away.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { assertEveryKeyExpires, eventually, within } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runProcess } from "../helpers/run-process.js";

const EXAMPLE = "examples/fixed-lease/time-boxed.ts";

describe("examples/fixed-lease/time-boxed.ts", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("each run stops at the end of its lease, the next goes on from the cursor, a concurrent one is turned away", async () => {
    const args = ["--import", "tsx", EXAMPLE, "--budget", "700", "--items", "10", "--step", "100"];
    const env = { REDIS_URL: server.url };
    // A second run while the first works: started once the first holds the lock.
    const first = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    first.stdout.setEncoding("utf8").on("data", (chunk: string) => { out += chunk; });
    const firstExit = new Promise<number | null>((resolve) => first.on("exit", resolve));
    // The other process's lock is Redis state, with no event to wait on.
    await eventually(async () => (await server.command("HEXISTS", "surelock:{job:reindex}:lock", "o")) === 1, 10_000, "the first run to hold the lock");
    const busy = await runProcess(process.execPath, [...args, "--timeout", "0"], { env, timeoutMs: 30_000 });
    assert.equal(busy.stdout, "busy: another run is at work\n", busy.stderr);
    assert.equal(await within(10_000, firstExit), 0);
    const stopped = /^stopped at the end of its 700 ms lease: items 0 to (\d+); the next run goes on from \1\n$/.exec(out);
    assert.ok(stopped, out);
    const done = Number(stopped[1]);
    assert.ok(done >= 3 && done < 10, `${done} items in 700 ms at 100 ms each`);
    assert.equal(await server.command("GET", "{job:reindex}:cursor"), String(done));
    const second = await runProcess(process.execPath, [...args, "--budget", "5000"], { env, timeoutMs: 30_000 });
    assert.equal(second.stdout, `done: items ${done} to 10 of 10\n`, second.stderr);
    await server.command("DEL", "{job:reindex}:cursor");
    await assertEveryKeyExpires(server);
  });
});
