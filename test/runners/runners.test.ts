/**
 * surelock on its test double under the test runners people use, each with its default fake
 * timers on: vitest runs locks.vitest.ts (docs/testing.md's example) and jest fake-timers.jest.cjs, both
 * against the built package as a user imports it (ESM and CommonJS); node:test's mock timers run
 * here, in process. The double's replies cross on Node's own setImmediate, which no runner fakes.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, it, mock } from "node:test";
import { Surelock } from "../../src/index.js";
import { MemoryRedis } from "../../src/testing/index.js";
import { within } from "../helpers/fixtures.js";

const ROOT = resolve(".");

/** Runs a runner's CLI to its end; its exit code and everything it printed. */
async function run(args: string[]): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: "true", NO_COLOR: "1" };
  delete env.FORCE_COLOR;
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => { out += d; });
  child.stderr.on("data", (d: Buffer) => { out += d; });
  try {
    return { code: await within(120_000, new Promise<number | null>((done) => child.on("exit", done)), args[0] ?? "runner"), out };
  } finally {
    child.kill("SIGKILL");
  }
}

describe("test runners, default fake timers on", () => {
  it("vitest: locks.vitest.ts (docs/testing.md's vitest example) passes with vi.useFakeTimers()", async () => {
    const example = readFileSync("test/runners/locks.vitest.ts", "utf8");
    assert.match(example, /vi\.useFakeTimers\(\)/);
    // Vite resolves imports itself (no self-reference): the package's names point at its built files.
    const dir = mkdtempSync(join(ROOT, ".readme-vitest-"));
    try {
      writeFileSync(join(dir, "locks.test.ts"), example);
      writeFileSync(join(dir, "vitest.config.mjs"), `export default { resolve: { alias: [
  { find: /^surelock\\/testing$/, replacement: ${JSON.stringify(join(ROOT, "dist/testing.js"))} },
  { find: /^surelock$/, replacement: ${JSON.stringify(join(ROOT, "dist/index.js"))} },
] }, test: { include: ["locks.test.ts"], testTimeout: 20000 } };\n`);
      const { code, out } = await run([join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--root", dir, "--config", join(dir, "vitest.config.mjs")]);
      const declared = example.match(/^test\(/gm)?.length ?? 0;
      assert.ok(declared >= 2, `the example declares its tests (found ${declared})`);
      assert.equal(code, 0, out);
      assert.match(out, new RegExp(`Tests\\s+${declared} passed \\(${declared}\\)`), out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("jest: fake-timers.jest.cjs passes with fake timers on for the whole run (fakeTimers.enableGlobally)", async () => {
    const config = {
      rootDir: ROOT, testMatch: ["<rootDir>/test/runners/*.jest.cjs"], moduleFileExtensions: ["js", "cjs", "json"], transform: {},
      testEnvironment: "node", fakeTimers: { enableGlobally: true }, cache: false,
      // The package's names, as a user's jest resolves them (jest does not resolve a package's own name).
      moduleNameMapper: { "^surelock$": "<rootDir>/dist/cjs/index.cjs", "^surelock/testing$": "<rootDir>/dist/cjs/testing.cjs" },
    };
    const { code, out } = await run([join(ROOT, "node_modules/jest/bin/jest.js"), "--config", JSON.stringify(config), "--ci"]);
    const declared = readFileSync("test/runners/fake-timers.jest.cjs", "utf8").match(/^test\(/gm)?.length ?? 0;
    assert.ok(declared >= 3, `fake-timers.jest.cjs declares its tests (found ${declared})`);
    assert.equal(code, 0, out);
    assert.match(out, new RegExp(`Tests:\\s+${declared} passed, ${declared} total`), out);
  });

  it("node:test: mock.timers on, a lock is taken, waited for, handed over and released", async () => {
    mock.timers.enable({ apis: ["setTimeout", "setInterval", "setImmediate"] });
    try {
      const redis = new MemoryRedis();
      const [a, b] = [new Surelock({ redis }), new Surelock({ redis: redis.duplicate() })];
      const first = await a.mutex("job").acquire();
      assert.equal(await b.mutex("job").tryAcquire(), null);
      const waiting = b.mutex("job").acquire({ timeout: 60_000 });
      await first.release();
      const second = await waiting;
      assert.ok(second.fencingToken > first.fencingToken);
      await second.release();
      assert.equal(await a.withLock("job", async () => redis.incr("runs")), 1);
      await Promise.all([a.close(), b.close()]);
    } finally {
      mock.timers.reset();
    }
  });
});
