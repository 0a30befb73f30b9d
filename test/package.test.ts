import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { startStandalone, type RedisServer } from "./helpers/redis-topology.js";
import { runOk, runProcess } from "./helpers/run-process.js";

const ROOT = resolve(".");
const NPM_MS = 120_000;
const RUN_MS = 30_000;
// The scratch project reaches node, npm and tsc through these; never the repository's packages.
const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** What a user gets from `npm install surelock`: the entry points package.json exports. */
describe("the built package", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { exports: Record<string, unknown>; bin: Record<string, string> };
  const run = (code: string, type: "module" | "commonjs"): string =>
    execFileSync(process.execPath, [type === "module" ? "--input-type=module" : "--input-type=commonjs", "-e", code], { encoding: "utf8" });

  it("import and require both resolve `surelock` and expose the same API", () => {
    const names = "Object.keys(m).sort().join(',')";
    const esm = run(`const m = await import('surelock'); console.log(${names})`, "module");
    const cjs = run(`const m = require('surelock'); console.log(${names})`, "commonjs");
    assert.equal(esm, cjs);
    for (const name of ["Surelock", "Mutex", "Lease", "LockLostError", "SurelockError", "channels", "FencingGuard"]) {
      assert.ok(esm.split(",").map((s) => s.trim()).includes(name), `${name} is exported`);
    }
  });

  it("surelock/adapter-kit resolves for import and require alike, with types, and is the very kit surelock/testing re-exports", () => {
    const names = "Object.keys(m).sort().join(',')";
    const esm = run(`const m = await import('surelock/adapter-kit'); console.log(${names})`, "module");
    assert.equal(esm, run(`const m = require('surelock/adapter-kit'); console.log(${names})`, "commonjs"));
    assert.deepEqual(esm.trim().split(","), ["AdapterVerificationError", "verifyAdapter"]);
    const kit = pkg.exports["./adapter-kit"] as { import: { types: string }; require: { types: string } };
    for (const file of [kit.import.types, kit.require.types]) assert.match(readFileSync(file, "utf8"), /verifyAdapter/);
    for (const type of ["module", "commonjs"] as const) {
      const load = (entry: string): string => (type === "module" ? `await import('${entry}')` : `require('${entry}')`);
      const same = run(`const kit = ${load("surelock/adapter-kit")}, testing = ${load("surelock/testing")}, main = ${load("surelock")};` +
        "const e = new kit.AdapterVerificationError({ adapter: 'x', keyPrefix: undefined, ok: false, checks: [] });" +
        "console.log(kit.verifyAdapter === testing.verifyAdapter, e instanceof main.SurelockError)", type);
      assert.equal(same.trim(), "true true", `${type}: one kit, one library`);
    }
  });

  it("surelock/testing resolves for import and require alike, with types, and runs the library on MemoryRedis", () => {
    const names = "Object.keys(m).sort().join(',')";
    const esm = run(`const m = await import('surelock/testing'); console.log(${names})`, "module");
    assert.equal(esm, run(`const m = require('surelock/testing'); console.log(${names})`, "commonjs"));
    for (const name of ["MemoryRedis", "VirtualClock", "Gate"]) assert.ok(esm.trim().split(",").includes(name), `${name} is exported`);
    const testing = pkg.exports["./testing"] as { import: { types: string }; require: { types: string } };
    for (const file of [testing.import.types, testing.require.types]) assert.match(readFileSync(file, "utf8"), /MemoryRedis/);
    const token = run(
      "const { Surelock } = require('surelock'); const { MemoryRedis } = require('surelock/testing');" +
        "const locks = new Surelock({ redis: new MemoryRedis() });" +
        "locks.mutex('k').acquire().then(async (l) => { console.log(l.fencingToken > 0n); await locks.close(); });",
      "commonjs",
    );
    assert.equal(token.trim(), "true");
  });

  it("ships type declarations for both entry points", () => {
    const root = pkg.exports["."] as { import: { types: string }; require: { types: string } };
    for (const file of [root.import.types, root.require.types]) {
      assert.match(readFileSync(file, "utf8"), /Surelock/);
    }
  });

  it("the surelock command starts and prints its usage", () => {
    const out = execFileSync(process.execPath, [pkg.bin.surelock!, "--help"], { encoding: "utf8" });
    assert.match(out, /exec/);
    assert.match(out, /doctor/);
  });

  it("THIRD_PARTY_NOTICES.md lists exactly what the CLI bundle contains", async () => {
    const bundled = (JSON.parse(readFileSync("dist/cli/bundled.json", "utf8")) as { name: string }[]).map((p) => p.name);
    assert.ok(bundled.includes("ioredis"), `the CLI bundles ioredis (bundled: ${bundled.join(", ")})`);
    const notices = readFileSync("THIRD_PARTY_NOTICES.md", "utf8");
    for (const name of bundled) assert.match(notices, new RegExp(`^## ${name.replace(/[/]/g, "\\/")} `, "m"));
    // The generator's own check: the file is exactly what the current bundle calls for.
    await runOk(process.execPath, ["scripts/third-party-notices.mjs", "--check"], { timeoutMs: RUN_MS });
  });
});

/**
 * The whole way from a fresh checkout to a user's project: the files git would give a clone
 * (tracked, plus new files not ignored), `npm pack` there (its prepack script builds dist/),
 * the tarball installed offline into a scratch project that has no Redis client of its own,
 * then ESM import, CommonJS require, the type declarations and the `surelock` binary, each
 * against a real redis-server. The scripts reach ioredis through the repository's copy, as an
 * application passes in its own client; the binary must do without it.
 */
describe("npm pack of a fresh checkout", () => {
  let work: string;
  let scratch: string;
  let tarball: string;
  let server: RedisServer;
  let packed: string[];

  before(async () => {
    server = await startStandalone();
    work = mkdtempSync(join(tmpdir(), "surelock-pack-"));
    const checkout = join(work, "checkout");
    const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
    for (const file of listed.split("\0").filter((f) => f !== "" && existsSync(join(ROOT, f)))) {
      mkdirSync(dirname(join(checkout, file)), { recursive: true });
      copyFileSync(join(ROOT, file), join(checkout, file));
    }
    assert.ok(!existsSync(join(checkout, "dist")), "a fresh checkout has no dist/");
    // What `npm ci` would put there: the locked dev dependencies (esbuild, tsc) for the build.
    symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"), "dir");
    const out = join(work, "out");
    mkdirSync(out);
    await runOk("npm", ["pack", "--pack-destination", out], { cwd: checkout, env: { PATH }, timeoutMs: NPM_MS });
    const tgz = readdirSync(out).filter((f) => f.endsWith(".tgz"));
    assert.equal(tgz.length, 1, `one tarball: ${tgz.join(", ")}`);
    tarball = join(out, tgz[0] as string);
    packed = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n").filter(Boolean).map((p) => p.replace(/^package\//, ""));

    scratch = join(work, "scratch");
    mkdirSync(scratch);
    writeFileSync(join(scratch, "package.json"), `${JSON.stringify({ name: "scratch", version: "1.0.0", private: true })}\n`);
    await runOk("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: scratch, env: { PATH }, timeoutMs: NPM_MS });
  });

  after(async () => {
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Writes a file of the scratch project and runs it with node. */
  const writeRun = (file: string, lines: string[]) => {
    writeFileSync(join(scratch, file), lines.join("\n"));
    return runOk(process.execPath, [file], { cwd: scratch, env: { PATH }, timeoutMs: RUN_MS });
  };

  /** Runs a file of the scratch project with node, REDIS_URL set. */
  const node = (file: string, ...args: string[]) =>
    runOk(process.execPath, [file, ...args], { cwd: scratch, env: { PATH, REDIS_URL: server.url, REPO_PACKAGE_JSON: join(ROOT, "package.json") }, timeoutMs: RUN_MS });

  it("the tarball carries the built library, the CLI, the declarations and the notices, not the tests", () => {
    for (const file of ["dist/index.js", "dist/cjs/index.cjs", "dist/cjs/package.json", "dist/cli/main.js", "dist/types/index.d.ts", "dist/cjs/index.d.ts",
      "dist/testing.js", "dist/cjs/testing.cjs", "dist/adapter-kit.js", "dist/cjs/adapter-kit.cjs", "dist/types/adapter-kit/index.d.ts",
      "dist/cjs/adapter-kit/index.d.ts", "dist/otel.js", "dist/cjs/otel.cjs", "dist/types/otel/index.d.ts", "dist/cjs/otel/index.d.ts",
      "THIRD_PARTY_NOTICES.md", "README.md", "package.json"]) {
      assert.ok(packed.includes(file), `${file} is in the tarball`);
    }
    // What users run and read: no tests, no sources, no source maps pointing at sources it does not ship.
    assert.deepEqual(packed.filter((f) => /^(test|src|node_modules)\//.test(f) || f.endsWith(".map")), []);
  });

  it("the package has no dependencies (wasmoon and @opentelemetry/api are optional peers, of surelock/testing and surelock/otel; pg of the PostgreSQL store, etcd3 of the etcd store), and the scratch project has no ioredis", async () => {
    const manifest = JSON.parse(readFileSync(join(scratch, "node_modules", "surelock", "package.json"), "utf8")) as Record<string, unknown>;
    assert.equal(manifest.dependencies, undefined);
    assert.deepEqual(Object.keys(manifest.peerDependencies as object), ["@opentelemetry/api", "wasmoon", "pg", "etcd3"]);
    assert.deepEqual(manifest.peerDependenciesMeta, { "@opentelemetry/api": { optional: true }, wasmoon: { optional: true }, pg: { optional: true }, etcd3: { optional: true } });
    for (const name of ["ioredis", "wasmoon", "pg", "etcd3"]) {
      const r = await runProcess(process.execPath, ["-e", `require.resolve('${name}')`], { cwd: scratch, timeoutMs: RUN_MS });
      assert.notEqual(r.code, 0, `${name} cannot be resolved from the scratch project`);
    }
  });

  it("surelock/testing without wasmoon says to install it; with it, runs the library on MemoryRedis from ESM and CommonJS", async () => {
    const withoutIt = writeRun("nolua.cjs", [
      'const { Surelock } = require("surelock"); const { MemoryRedis } = require("surelock/testing");',
      'new Surelock({ redis: new MemoryRedis() }).mutex("k").acquire().then(() => console.log("acquired"), (e) => console.log(String(e.cause?.message ?? e.message)));',
    ]);
    assert.match((await withoutIt).stdout, /npm install --save-dev wasmoon/);
    // Installed as the repository's locked copy: a registry lookup, even one npm would answer from its
    // cache, fails on a machine whose cache never saw wasmoon's metadata (npm ci fetches tarballs only).
    symlinkSync(join(ROOT, "node_modules", "wasmoon"), join(scratch, "node_modules", "wasmoon"), "dir");
    const esm = await writeRun("testing.mjs", [
      'import { Surelock, LockLostError } from "surelock";',
      'import { MemoryRedis } from "surelock/testing";',
      "const redis = new MemoryRedis();",
      "const locks = new Surelock({ redis });",
      'const lease = await locks.mutex("k").acquire();',
      'await redis.del("surelock:{k}:lock");',
      "const lost = await lease.release().catch((e) => e instanceof LockLostError);",
      'console.log(lease.fencingToken > 0n, lost, await redis.eval("return ARGV[1]", 0, "lua"));',
      "await locks.close();",
    ]);
    assert.equal(esm.stdout.trim(), "true true lua");
    const cjs = await writeRun("testing.cjs", [
      'const { Surelock } = require("surelock"); const { MemoryRedis } = require("surelock/testing");',
      'const locks = new Surelock({ redis: new MemoryRedis() });',
      'locks.withLock("k", (lease) => lease.fencingToken).then(async (t) => { console.log(t > 0n); await locks.close(); });',
    ]);
    assert.equal(cjs.stdout.trim(), "true");
  });

  it("the library entry points import no Redis client (nothing but node: built-ins)", () => {
    for (const entry of ["dist/index.js", "dist/cjs/index.cjs"]) {
      const code = readFileSync(join(scratch, "node_modules", "surelock", entry), "utf8");
      // A method call such as the etcd store's `this.require("setPermits")` is not an import.
      const specifiers = [...code.matchAll(/(?:\bfrom\s*|(?<![.\w$])import\s*\(\s*|(?<![.\w$])require\s*\(\s*)["']([^"']+)["']/g)].map((m) => m[1]);
      assert.ok(specifiers.length > 0, `${entry}: the scan found its imports`);
      assert.deepEqual(specifiers.filter((s) => !s?.startsWith("node:")), [], `${entry} imports only node: built-ins`);
      assert.doesNotMatch(code, /require\(\s*["']ioredis["']\s*\)|from\s*["']ioredis["']/);
    }
  });

  it("ESM import takes a lock through the installed package", async () => {
    writeFileSync(join(scratch, "esm.mjs"), [
      'import { createRequire } from "node:module";',
      'import { Surelock } from "surelock";',
      'const { Redis } = createRequire(process.env.REPO_PACKAGE_JSON)("ioredis");',
      "const redis = new Redis(process.env.REDIS_URL);",
      "const locks = new Surelock({ redis });",
      'const token = await locks.withLock("packed:esm", (lease) => lease.fencingToken);',
      'console.log(import.meta.resolve("surelock"), typeof token, token > 0n);',
      "await locks.close();",
      "await redis.quit();",
    ].join("\n"));
    const r = await node("esm.mjs");
    const [resolved, type, positive] = r.stdout.trim().split(" ");
    assert.equal(resolved, `file://${join(scratch, "node_modules", "surelock", "dist", "index.js")}`);
    assert.deepEqual([type, positive], ["bigint", "true"]);
  });

  it("CommonJS require takes a lock through the installed package", async () => {
    writeFileSync(join(scratch, "cjs.cjs"), [
      'const { Surelock } = require("surelock");',
      'const { Redis } = require("node:module").createRequire(process.env.REPO_PACKAGE_JSON)("ioredis");',
      "(async () => {",
      "  const redis = new Redis(process.env.REDIS_URL);",
      "  const locks = new Surelock({ redis });",
      '  const lease = await locks.mutex("packed:cjs").acquire();',
      '  console.log(require.resolve("surelock"), typeof lease.fencingToken, lease.held);',
      "  await lease.release();",
      "  await locks.close();",
      "  await redis.quit();",
      "})();",
    ].join("\n"));
    const r = await node("cjs.cjs");
    const [resolved, type, held] = r.stdout.trim().split(" ");
    assert.equal(resolved, join(scratch, "node_modules", "surelock", "dist", "cjs", "index.cjs"));
    assert.deepEqual([type, held], ["bigint", "true"]);
  });

  it("the declarations type-check from ESM and CommonJS under NodeNext, without ioredis or skipLibCheck", async () => {
    writeFileSync(join(scratch, "types.mts"), [
      'import { Surelock, LockLostError, type Lease, type RedisAdapter } from "surelock";',
      'import { MemoryRedis, VirtualClock, type IoredisCommands } from "surelock/testing";',
      'import { verifyAdapter, type AdapterReport } from "surelock/adapter-kit";',
      "export const double = (): Surelock => new Surelock({ redis: new MemoryRedis({ clock: new VirtualClock() }) });",
      "export const data = (client: IoredisCommands): Promise<string | null> => client.get(\"k\");",
      "export const check = (redis: RedisAdapter): Promise<AdapterReport> => verifyAdapter(redis);",
      "export const token = (lease: Lease): bigint => lease.fencingToken;",
      "export const make = (redis: RedisAdapter): Surelock => new Surelock({ redis });",
      'export const lost = (e: unknown): boolean => e instanceof LockLostError && e.reason === "taken";',
    ].join("\n"));
    writeFileSync(join(scratch, "types.cts"), [
      'import surelock = require("surelock");',
      'import testing = require("surelock/testing");',
      'import kit = require("surelock/adapter-kit");',
      "export const double = (): surelock.Surelock => new surelock.Surelock({ redis: new testing.MemoryRedis() });",
      "export const check = (redis: surelock.RedisAdapter): Promise<kit.AdapterReport> => kit.verifyAdapter(redis);",
      "export const token = (lease: surelock.Lease): bigint => lease.fencingToken;",
      "export const make = (redis: surelock.RedisAdapter): surelock.Surelock => new surelock.Surelock({ redis });",
    ].join("\n"));
    await runOk(process.execPath, [
      TSC, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
      "--types", "node", "--typeRoots", join(ROOT, "node_modules", "@types"), "types.mts", "types.cts",
    ], { cwd: scratch, timeoutMs: NPM_MS });
  });

  it("classic `module: commonjs` TypeScript (node10 resolution, typesVersions) compiles an import of every entry, with and without esModuleInterop", async () => {
    // The optional peer, as a user who wants surelock/otel installs it (the repository's copy: no registry needed).
    mkdirSync(join(scratch, "node_modules", "@opentelemetry"), { recursive: true });
    symlinkSync(join(ROOT, "node_modules", "@opentelemetry", "api"), join(scratch, "node_modules", "@opentelemetry", "api"), "dir");
    writeFileSync(join(scratch, "classic.ts"), [
      'import { Surelock, channels, type Lease, type WaitMessage } from "surelock";',
      'import { MemoryRedis } from "surelock/testing";',
      'import { verifyAdapter } from "surelock/adapter-kit";',
      'import { instrumentSurelock, type SurelockInstrumentation } from "surelock/otel";',
      "export const locks = new Surelock({ redis: new MemoryRedis(), acquireTimeout: 5_000 });",
      "export const token = (lease: Lease): bigint => lease.fencingToken;",
      "export const phase = (m: WaitMessage): string => m.phase;",
      "export const check = verifyAdapter;",
      "export const named = channels.wait.name;",
      'const options: SurelockInstrumentation = { metricKey: (k) => k.split(":")[0] };',
      "export const stop: () => void = instrumentSurelock(options);",
    ].join("\n"));
    for (const interop of [[], ["--esModuleInterop"]]) {
      await runOk(process.execPath, [
        TSC, "--noEmit", "--strict", "--module", "commonjs", "--target", "es2022", ...interop,
        "--types", "node", "--typeRoots", join(ROOT, "node_modules", "@types"), "classic.ts",
      ], { cwd: scratch, timeoutMs: NPM_MS });
    }
    // And it loads from both builds and hears the library's channels through the installed @opentelemetry/api.
    for (const [file, load] of [["otel.cjs", "require(\"surelock/otel\")"], ["otel.mjs", "await import(\"surelock/otel\")"]] as const) {
      const main = file.endsWith(".cjs") ? 'require("surelock")' : 'await import("surelock")';
      const r = await writeRun(file, [
        `const { channels } = ${main}; const { instrumentSurelock } = ${load};`,
        "const stop = instrumentSurelock();",
        "console.log(channels.wait.hasSubscribers);",
        'channels.wait.publish({ key: "k", phase: "start", waitedMs: 0 });',
        "stop();",
        "console.log(channels.wait.hasSubscribers);",
      ]);
      assert.equal(r.stdout.trim(), "true\nfalse", file);
    }
  });

  it("the surelock binary runs a command under a lock with no ioredis installed", async () => {
    const bin = join(scratch, "node_modules", ".bin", "surelock");
    const version = await runOk(bin, ["--version"], { cwd: scratch, env: { PATH }, timeoutMs: RUN_MS });
    assert.equal(version.stdout.trim(), (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version);
    const r = await runOk(bin, [
      "exec", "--redis", server.url, "--key", "packed:cli", "--",
      process.execPath, "-e", "console.log(process.env.SURELOCK_KEY, process.env.SURELOCK_FENCING_TOKEN)",
    ], { cwd: scratch, env: { PATH }, timeoutMs: RUN_MS });
    assert.match(r.stdout, /^packed:cli \d+\n$/);
    const doctor = await runProcess(bin, ["doctor", "--redis", server.url, "--json"], { cwd: scratch, env: { PATH }, timeoutMs: RUN_MS });
    assert.equal((JSON.parse(doctor.stdout) as { checks: { check: string; status: string }[] }).checks.find((c) => c.check === "scripting")?.status, "ok");
  });
});
