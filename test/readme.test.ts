import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
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

  it("its first screen gives the install line, a service example, which primitive for which job, and links every guide", () => {
    const lines = readFileSync("README.md", "utf8").split("\n");
    const firstScreen = lines.slice(0, 80).join("\n");
    assert.ok(lines.slice(0, 25).some((l) => l.trim() === "npm i surelock ioredis"), "the install line, near the top");
    const example = /```ts\n([\s\S]*?)```/.exec(firstScreen)?.[1] ?? "";
    assert.ok(example.split("\n").length <= 30, "a short service example");
    for (const part of ["timeout", "close()", "acquireTimeout"]) assert.ok(example.includes(part), `the example shows ${part}`);
    assert.match(firstScreen, /## Which primitive for which job/);
    // Every guide under docs/ (every page but the generated figures), linked from the first screen.
    const pages = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? pages(join(dir, e.name)) : e.name.endsWith(".md") ? [relative(".", join(dir, e.name))] : []);
    const guides = pages("docs");
    assert.ok(guides.length >= 15, `found ${guides.length} pages under docs/`);
    const linked = new Set([...firstScreen.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]));
    assert.deepEqual(guides.filter((g) => !linked.has(g)), [], "guides not linked from the first screen");
    for (const link of linked) if (!/^https?:/.test(link ?? "")) assert.ok(existsSync(link as string), `${link} exists`);
  });

  it("the docs, which the package ships, link to no file under examples/, which it does not", () => {
    const pages = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? pages(join(dir, e.name)) : e.name.endsWith(".md") ? [join(dir, e.name)] : []);
    const offenders = pages("docs").flatMap((page) =>
      [...readFileSync(page, "utf8").matchAll(/\]\(([^)]*examples\/[^)]*)\)/g)].map((m) => `${page}: ${m[1]}`));
    assert.deepEqual(offenders, []);
  });

  it("its first example runs as written against the built package", async () => {
    const readme = readFileSync("README.md", "utf8");
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(example, "the README has a ts example");
    // Inside the package directory, `import "surelock"` resolves to this package's own exports.
    const dir = mkdtempSync(join(process.cwd(), ".readme-"));
    try {
      const file = join(dir, "example.mts");
      writeFileSync(file, example);
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
      assert.match(out, /order 42 charged, fencing token issued/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
