// examples/fixed-lease/time-boxed.ts: a batch job that works for its fixed lease and stops there;
// the next run goes on from its cursor; a run started while the job is held, with --timeout 0,
// is turned away.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { assertEveryKeyExpires } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runProcess } from "../helpers/run-process.js";

const EXAMPLE = "examples/fixed-lease/time-boxed.ts";

describe("examples/fixed-lease/time-boxed.ts", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("a run stops at the end of its lease, the next goes on from the cursor, and one started while the job is held is turned away", async () => {
    const run = (...extra: string[]) => runProcess(process.execPath, ["--import", "tsx", EXAMPLE, "--items", "10", "--step", "100", ...extra], {
      env: { REDIS_URL: server.url }, timeoutMs: 60_000,
    });
    // Another run holds the job (this test, here): a run with --timeout 0 does not wait for it.
    const redis = new Redis(server.port);
    const locks = new Surelock({ redis });
    try {
      const held = await locks.mutex("job:reindex").acquire();
      const busy = await run("--timeout", "0");
      assert.equal(busy.stdout, "busy: another run is at work\n", busy.stderr);
      await held.release();
    } finally {
      await locks.close();
      redis.disconnect();
    }
    // 10 items of 100 ms each take a second at least: a 700 ms lease ends first.
    const first = await run("--budget", "700");
    const stopped = /^stopped at the end of its 700 ms lease: items 0 to (\d+); the next run goes on from \1\n$/.exec(first.stdout);
    assert.ok(stopped, first.stdout + first.stderr);
    const done = Number(stopped[1]);
    assert.ok(done < 10);
    assert.equal(await server.command("GET", "{job:reindex}:cursor"), done === 0 ? null : String(done));
    const second = await run("--budget", "30000");
    assert.equal(second.stdout, `done: items ${done} to 10 of 10\n`, second.stderr);
    await server.command("DEL", "{job:reindex}:cursor");
    await assertEveryKeyExpires(server);
  });
});
