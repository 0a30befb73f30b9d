// examples/latch/batch.ts: a coordinator that waits on a countdown latch for its worker processes.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { assertEveryKeyExpires } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runProcess } from "../helpers/run-process.js";

describe("examples/latch/batch.ts", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("the coordinator goes on once the last of its 3 workers counted down, and leaves only the expiring latch", async () => {
    const run = await runProcess(process.execPath, ["--import", "tsx", "examples/latch/batch.ts", "--parts", "3", "--batch", "nightly"], {
      env: { REDIS_URL: server.url }, timeoutMs: 60_000,
    });
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trim().split("\n");
    assert.deepEqual(lines.filter((l) => l.startsWith("worker")).map((l) => l.replace(/^worker \d/, "worker N")).sort(),
      ["worker N: done, 0 part(s) left", "worker N: done, 1 part(s) left", "worker N: done, 2 part(s) left"]);
    assert.match(lines.find((l) => l.startsWith("coordinator")) ?? "", /^coordinator: all 3 parts done after \d+ ms: 3 results$/);
    assert.deepEqual(await server.command("KEYS", "*"), ["surelock:latch:{nightly:parts}:state"]);
    await assertEveryKeyExpires(server);
  });
});
