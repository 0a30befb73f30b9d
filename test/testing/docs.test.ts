/** docs/testing.md's example is a test file: it runs, as written, against the built package. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { within } from "../helpers/fixtures.js";

describe("docs/testing.md", () => {
  it("its example passes as a node:test file, importing surelock and surelock/testing", async () => {
    const example = /```ts\n([\s\S]*?)```/.exec(readFileSync("docs/testing.md", "utf8"))?.[1];
    assert.ok(example, "docs/testing.md has a ts example");
    // Inside the package directory, `surelock` and `surelock/testing` resolve to this package's exports.
    const dir = mkdtempSync(join(process.cwd(), ".readme-testing-"));
    try {
      const file = join(dir, "reserve.test.mts");
      writeFileSync(file, example);
      // A test file of its own, not a child of this runner (which would swallow its report).
      const env = { ...process.env };
      delete env.NODE_TEST_CONTEXT;
      const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", file], { env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d: Buffer) => { out += d; });
      child.stderr.on("data", (d: Buffer) => { out += d; });
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      try {
        assert.equal(await within(30_000, exited, "the example's tests"), 0, out);
      } finally {
        child.kill("SIGKILL");
      }
      // Every test the example declares ran and passed.
      const declared = example.match(/^(?:test|it)\(/gm)?.length ?? 0;
      assert.ok(declared >= 3, `the example declares its tests (found ${declared})`);
      assert.match(out, new RegExp(`# pass ${declared}\n`), out);
      assert.match(out, /# fail 0\n/, out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
