/**
 * What a failure settles with: the right class, under its own name, in both builds; a deployment
 * too old is refused at the first call with UnsupportedError naming its version and what is
 * missing; an error reply of a script is a ScriptError, not a ConnectionError; and the CLI never
 * reports a state it did not observe.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ConnectionError, ScriptError, Surelock, UnsupportedError, type RedisAdapter } from "../../src/index.js";
import { MemoryRedis } from "../../src/testing/index.js";
import { cli, ROOT } from "../cli/support.js";
import { Harness } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { rejection, settles } from "./support.js";

/** Prints `name code` of every error class, constructed, and of one error thrown by the library. */
const PROBE = `
const classes = Object.entries(m).filter(([n, v]) => typeof v === "function" && n.endsWith("Error"));
const args = { QuorumError: ["k", "acquire", []], InvalidArgumentError: ["key", "", "a key"] };
for (const [n, C] of classes) { const e = new C(...(args[n] ?? ["k", "x", "y"])); console.log(n, e.name, e.code ?? ""); }
try { new m.Surelock({ redis: {} }); } catch (e) { console.log("thrown", e.name, e.code, e instanceof m.InvalidArgumentError); }
`;

describe("errors: classes, names, and what each failure settles with", () => {
  it("err.name is the class name in the built ESM and CJS packages (classes and a real throw)", () => {
    const esm = join(ROOT, "dist", "index.js");
    const cjs = join(ROOT, "dist", "cjs", "index.cjs");
    assert.ok(existsSync(esm) && existsSync(cjs), "run `npm run build` first");
    const outputs = [
      execFileSync(process.execPath, ["--input-type=module", "-e", `import * as m from ${JSON.stringify(esm)};${PROBE}`], { encoding: "utf8" }),
      execFileSync(process.execPath, ["-e", `const m = require(${JSON.stringify(cjs)});${PROBE}`], { encoding: "utf8" }),
    ];
    for (const out of outputs) {
      const lines = out.trim().split("\n").map((l) => l.split(" "));
      const classes = lines.filter(([n]) => n !== "thrown");
      assert.ok(classes.length >= 12, `found ${classes.length} error classes`);
      for (const [className, name, code] of classes) {
        assert.equal(name, className, `${className}.name`);
        if (className !== "SurelockError") assert.match(code ?? "", /^ERR_SURELOCK_[A-Z_]+$/, `${className}.code`);
      }
      assert.deepEqual(lines.find(([n]) => n === "thrown"), ["thrown", "InvalidArgumentError", "ERR_SURELOCK_INVALID_ARGUMENT", "true"]);
    }
    assert.equal(outputs[0], outputs[1], "both builds agree");
  });

  /** MemoryRedis reporting `version`, seen by surelock as a Cluster adapter (or not). */
  function deployment(version: string, cluster: boolean): { adapter: RedisAdapter; infos: () => number } {
    const memory = new MemoryRedis({ version });
    let infos = 0;
    memory.intercept((call) => {
      if (call.name === "INFO") infos++;
      return undefined;
    });
    const adapter: RedisAdapter = {
      name: cluster ? "cluster" : "memory", cluster,
      evalsha: (sha, keys, args) => memory.evalsha(sha, keys, args),
      eval: (script, keys, args) => memory.eval(script, keys, args),
      command: (args) => memory.command(args),
      createSubscriber: () => memory.createSubscriber(),
    };
    return { adapter, infos: () => infos };
  }

  it("a Cluster of Redis 6.2 (MemoryRedis reporting 6.2, as a cluster adapter) is refused at the first call, and only asked once", async () => {
    const { adapter, infos } = deployment("6.2.14", true);
    const locks = new Surelock({ redis: adapter });
    for (const call of [() => locks.mutex("k").acquire(), () => locks.semaphore("s", { permits: 2 }).tryAcquire()]) {
      const error = rejection(await settles(call(), 2_000));
      assert.ok(error instanceof UnsupportedError, String(error));
      assert.equal(error.code, "ERR_SURELOCK_UNSUPPORTED");
      assert.match(error.message, /6\.2/);
      assert.match(error.message, /7\.0/);
      assert.match(error.message, /SPUBLISH/);
    }
    assert.equal(infos(), 1, "INFO asked once");
    await locks.close();
  });

  it("a standalone Redis 6.2 works; 6.0 is refused, naming the version it needs", async () => {
    const ok = new Surelock({ redis: deployment("6.2.0", false).adapter });
    await (await ok.mutex("k").acquire()).release();
    await ok.close();
    const old = new Surelock({ redis: deployment("6.0.9", false).adapter });
    const error = rejection(await settles(old.mutex("k").acquire(), 2_000));
    assert.ok(error instanceof UnsupportedError);
    assert.match(error.message, /6\.0.*6\.2 or later/);
    await old.close();
  });

  describe("on a real server", () => {
    let server: RedisServer;
    let h: Harness;
    before(async () => { server = await startStandalone(); h = new Harness(server); });
    after(async () => { await h.cleanup(); await server.stop(); });

    it("a script's error reply (a key of the wrong type) is a ScriptError with the reply as cause, not a ConnectionError", async () => {
      await server.command("SET", "surelock:{wrong}:lock", "not a hash");
      const error = rejection(await settles(h.locks().mutex("wrong").acquire(), 2_000));
      assert.ok(error instanceof ScriptError, String(error));
      assert.ok(!(error instanceof ConnectionError));
      assert.equal(error.code, "ERR_SURELOCK_SCRIPT");
      assert.match(String((error.cause as Error).message), /WRONGTYPE/);
      await server.command("DEL", "surelock:{wrong}:lock");
    });

    it("the CLI reports no state it did not observe: Redis unreachable is exit 69 and nothing on stdout", async () => {
      const port = server.port;
      const dead = await startStandalone();
      const deadPort = dead.port;
      await dead.stop();
      for (const args of [["inspect", "k"], ["list"], ["release", "k", "--force"], ["inspect", "k", "--json"]]) {
        const r = await cli(["--redis", `redis://127.0.0.1:${deadPort}`, ...args]);
        assert.equal(r.code, 69, `${args.join(" ")}: exit ${r.code}, stderr ${r.stderr}`);
        assert.equal(r.stdout, "", `${args.join(" ")} printed a state: ${r.stdout}`);
      }
      // Reachable, for contrast: a free key is reported as observed.
      const r = await cli(["--redis", `redis://127.0.0.1:${port}`, "inspect", "k", "--json"]);
      assert.equal(r.code, 0, r.stderr);
      assert.notEqual(r.stdout, "");
    });
  });
});
