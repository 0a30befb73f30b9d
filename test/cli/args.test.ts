// Command-line parsing: bad arguments exit with 2 and one line naming the flag and the value,
// before any connection is made; --help and --version exit with 0. The cases run in this process
// through `main()`; the last suite runs the executable itself, whose exit code is main's.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { InvalidArgumentError } from "../../src/errors.js";
import { main } from "../../src/cli/cli.js";
import { cli as inAProcess, type CliResult } from "./support.js";

/** Runs `surelock args...` in this process, with only `env` as its environment. */
async function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(args, env, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, signal: null, stdout, stderr };
}

// Nothing listens on port 1: a case that tried to connect would fail with 69, not 2.
const NOWHERE = ["--redis", "redis://127.0.0.1:1"];

const BAD: readonly (readonly [string, readonly string[], RegExp, NodeJS.ProcessEnv?])[] = [
  ["a malformed --ttl", ["exec", ...NOWHERE, "--key", "k", "--ttl", "abc", "--", "true"], /invalid --ttl "abc": expected a duration/],
  ["a --ttl below 10 ms", ["exec", ...NOWHERE, "--key", "k", "--ttl", "5ms", "--", "true"], /invalid --ttl "5ms": expected at least 10ms/],
  ["a --ttl without a unit", ["exec", ...NOWHERE, "--key", "k", "--ttl", "5", "--", "true"], /invalid --ttl "5": a duration needs a unit \(ms, s, m or h\): did you mean 5s\?/],
  ["a --timeout without a unit", ["exec", ...NOWHERE, "--key", "k", "--timeout", "10", "--", "true"], /invalid --timeout "10": a duration needs a unit \(ms, s, m or h\): did you mean 10s\?/],
  ["an empty --owner", ["exec", ...NOWHERE, "--key", "k", "--owner=", "--", "true"], /invalid --owner "": expected 1 to 256 bytes of well-formed UTF-8/],
  ["--owner on another command", ["inspect", ...NOWHERE, "k", "--owner", "me"], /unknown option --owner; it belongs to surelock exec/],
  ["a fraction of a millisecond", ["exec", ...NOWHERE, "--key", "k", "--timeout", "1.5ms", "--", "true"], /invalid --timeout "1\.5ms"/],
  ["a negative --timeout", ["exec", ...NOWHERE, "--key", "k", "--timeout", "-1", "--", "true"], /missing value for --timeout \(got "-1"/],
  ["a malformed --kill-after", ["exec", ...NOWHERE, "--key", "k", "--kill-after", "soon", "--", "true"], /invalid --kill-after "soon"/],
  ["exec without --key", ["exec", ...NOWHERE, "--", "true"], /missing --key/],
  ["an empty --key", ["exec", ...NOWHERE, "--key=", "--", "true"], /invalid --key "": expected 1 to 1024 bytes of well-formed UTF-8/],
  ["--key without a value", ["exec", ...NOWHERE, "--key"], /missing value for --key/],
  ["exec without a command", ["exec", ...NOWHERE, "--key", "k"], /missing the command to run, after --/],
  ["a command not after --", ["exec", ...NOWHERE, "--key", "k", "echo", "hi"], /unexpected argument "echo": put the command after --/],
  ["an unknown flag", ["exec", ...NOWHERE, "--nope", "--key", "k", "--", "true"], /unknown option --nope/],
  ["another command's flag", ["exec", ...NOWHERE, "--json", "--key", "k", "--", "true"], /unknown option --json; it belongs to surelock inspect, surelock list, surelock doctor/],
  ["a value for a boolean flag", ["exec", ...NOWHERE, "--fair=yes", "--key", "k", "--", "true"], /option --fair takes no value, got "yes"/],
  ["a flag given twice", ["exec", ...NOWHERE, "--key", "a", "--key", "b", "--", "true"], /option --key given more than once/],
  ["--permits without --semaphore", ["exec", ...NOWHERE, "--key", "k", "--permits", "3", "--", "true"], /--permits needs --semaphore \(write --semaphore --permits 3/],
  ["--semaphore without --permits", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--", "true"], /--semaphore needs --permits N/],
  ["--semaphore with the permits as an operand", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "3", "--", "true"], /unexpected argument "3": did you mean --permits 3\?/],
  ["--permits 0", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "0", "--", "true"], /invalid --permits "0": expected a whole number from 1 to 1000000 \(see/],
  ["too many --permits", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "1000001", "--", "true"], /invalid --permits "1000001": expected a whole number from 1 to 1000000/],
  ["--permits as a fraction", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "2.5", "--", "true"], /invalid --permits "2\.5": expected a whole number from 1 to 1000000 \(see/],
  ["--permits spelled as a float", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "3.0", "--", "true"], /invalid --permits "3\.0": expected a whole number from 1 to 1000000: did you mean 3\?/],
  ["--permits in words", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "three", "--", "true"], /invalid --permits "three"/],
  ["--shared with --exclusive", ["exec", ...NOWHERE, "--key", "k", "--shared", "--exclusive", "--", "true"], /--shared and --exclusive do not go together: --shared takes the read side/],
  ["--shared with --semaphore", ["exec", ...NOWHERE, "--key", "k", "--semaphore", "--permits", "2", "--shared", "--", "true"], /--shared and --semaphore do not go together: a command runs under one lock/],
  ["a key without --key", ["exec", ...NOWHERE, "--shared", "reports", "--", "true"], /unexpected argument "reports": did you mean --key reports\?/],
  ["--permits on another command", ["inspect", ...NOWHERE, "k", "--permits", "2"], /unknown option --permits; it belongs to surelock exec/],
  ["inspect without a key", ["inspect", ...NOWHERE], /missing K/],
  ["inspect with two keys", ["inspect", ...NOWHERE, "a", "b"], /unexpected argument "b"/],
  ["list with release's flag", ["list", ...NOWHERE, "--force"], /unknown option --force; it belongs to surelock release/],
  ["an unknown --kind", ["release", ...NOWHERE, "k", "--force", "--kind", "lock"], /invalid --kind "lock": expected mutex, rw, semaphore/],
  ["doctor with an operand", ["doctor", ...NOWHERE, "extra"], /unexpected argument "extra"/],
  ["doctor --counter-retention without a unit", ["doctor", ...NOWHERE, "--counter-retention", "300"], /invalid --counter-retention "300".*did you mean 300s\?/],
  ["--counter-retention on another command", ["list", ...NOWHERE, "--counter-retention", "5m"], /unknown option --counter-retention; it belongs to surelock doctor/],
  ["an unknown command", ["frobnicate"], /unknown command "frobnicate": expected one of exec, inspect, list, release, doctor/],
  ["a flag before any command", ["--json"], /unknown option --json before a command/],
  ["a URL that is not redis://", ["list", "--redis", "http://127.0.0.1:1"], /invalid --redis "http:\/\/127\.0\.0\.1:1": expected a URL/],
  ["one server given twice", ["list", ...NOWHERE, "--redis", "redis://127.0.0.1:1/0"], /127\.0\.0\.1:1 is given twice/],
  ["a prefix with braces", ["list", ...NOWHERE, "--prefix", "a{b}"], /invalid --prefix "a\{b\}"/],
  ["a bad REDIS_URL", ["list"], /invalid REDIS_URL "nope"/, { REDIS_URL: "nope" }],
  ["leader with --wait and --follow", ["leader", ...NOWHERE, "k", "--wait", "--follow"], /--wait and --follow do not go together/],
  ["leader --timeout without --wait", ["leader", ...NOWHERE, "k", "--timeout", "1s"], /--timeout needs --wait/],
];

void describe("command-line errors", () => {
  for (const [what, args, message, env] of BAD) {
    void it(`${what} exits with 2 and one line naming it`, async () => {
      const r = await cli(args, env);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      const lines = r.stderr.trimEnd().split("\n");
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0] ?? "", /^surelock( \w+)?: /);
      assert.match(lines[0] ?? "", message);
    });
  }

  void it("no arguments at all print the usage on stderr and exit with 2", async () => {
    const r = await cli([]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^Usage:$/m);
  });
});

void describe("help and version", () => {
  void it("--help prints the usage of every command and exits with 0", async () => {
    const r = await cli(["--help"]);
    assert.equal(r.code, 0);
    for (const command of ["exec", "inspect", "list", "release", "doctor", "leader"]) assert.match(r.stdout, new RegExp(`surelock ${command}`));
  });

  void it("COMMAND --help (or -h) prints that command's options and exits with 0", async () => {
    const exec = await cli(["exec", "--help"]);
    assert.equal(exec.code, 0);
    assert.match(exec.stdout, /^Usage: surelock exec --key K/);
    assert.match(exec.stdout, /--kill-after D/);
    assert.match(exec.stdout, /--owner O/);
    for (const flag of ["--shared", "--exclusive", "--semaphore", "--permits N"]) assert.ok(exec.stdout.includes(flag), flag);
    assert.match(exec.stdout, /Durations take a unit: 500ms, 30s, 2m, 1h/);
    const release = await cli(["release", "-h"]);
    assert.equal(release.code, 0);
    assert.match(release.stdout, /--force/);
  });

  void it("--version prints the package version", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    const r = await cli(["--version"]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), pkg.version);
  });
});

void describe("the executable", { concurrency: 2 }, () => {
  void it("exits with main's code and writes to its own streams", async () => {
    const bad = await inAProcess(["exec", ...NOWHERE, "--key", "k", "--ttl", "abc", "--", "true"]);
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, "");
    assert.match(bad.stderr, /^surelock exec: invalid --ttl "abc"/);
    const version = await inAProcess(["--version"]);
    assert.equal(version.code, 0);
    assert.match(version.stdout, /^\d+\.\d+\.\d+/);
  });

  void it("main() checks its own arguments", async () => {
    assert.throws(() => main("exec" as unknown as string[], {}), (e: unknown) => e instanceof InvalidArgumentError && /argv/.test(e.message));
    assert.throws(() => main([], null as unknown as NodeJS.ProcessEnv), (e: unknown) => e instanceof InvalidArgumentError && /env/.test(e.message));
    assert.throws(() => main([], {}, { stdout: () => undefined } as never), (e: unknown) => e instanceof InvalidArgumentError && /output/.test(e.message));
  });

  void it("two runs at once each write to their own output", async () => {
    const [a, b] = await Promise.all([cli(["--version"]), cli(["frobnicate"])]);
    assert.equal(a.stderr, "");
    assert.match(a.stdout, /^\d+\.\d+\.\d+\n$/);
    assert.equal(b.stdout, "");
    assert.match(b.stderr, /unknown command "frobnicate"/);
  });
});
