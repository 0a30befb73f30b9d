import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { within } from "./helpers/fixtures.js";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";

describe("README", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("starts with the demo command and the test command", () => {
    const lines = readFileSync("README.md", "utf8").split("\n").slice(0, 6).join("\n");
    assert.match(lines, /npm install && npm run demo/);
    assert.match(lines, /npm test/);
  });

  it("its first example runs as written against the built package", async () => {
    const readme = readFileSync("README.md", "utf8");
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(example, "the README has a ts example");
    // Inside the package directory, `import "surelock"` resolves to this package's own exports.
    const dir = mkdtempSync(join(process.cwd(), ".readme-"));
    try {
      const file = join(dir, "example.mts");
      writeFileSync(file, `${example}\nconsole.log("total", total);\n`);
      const child = spawn(process.execPath, ["--import", "tsx", file], {
        env: { ...process.env, REDIS_URL: server.url }, stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => { out += d; });
      child.stderr.on("data", (d: Buffer) => { out += d; });
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      try {
        assert.equal(await within(20_000, exited, "the example exiting on its own"), 0, out);
      } finally {
        child.kill("SIGKILL");
      }
      assert.match(out, /total 42/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
