// Credentials and ACLs: a wrong password, none, or an ACL user without EVALSHA/EVAL make every
// command exit 77 (EX_NOPERM) with a hint, never 70 "internal error" nor 69 "unavailable".
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { cli } from "./support.js";

void describe("surelock CLI: authentication and ACL failures", () => {
  let server: RedisServer;
  let url: (user: string, password: string) => string;
  before(async () => {
    server = await startStandalone();
    await server.command("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval");
    // Last: the helper's own commands go unauthenticated.
    await server.command("CONFIG", "SET", "requirepass", "right");
    url = (user, password) => server.url.replace("redis://", `redis://${user}:${password}@`);
  });
  after(async () => { await server.stop(); });

  void it("a wrong password, no password and an ACL without EVALSHA exit 77 with a hint, for every command that talks to Redis", async () => {
    const cases: [string, string][] = [
      ["wrong password", url("default", "wrong")],
      ["no password", server.url],
      ["ACL without EVALSHA", url("noeval", "pw")],
    ];
    for (const [what, redis] of cases) {
      const commands = what === "ACL without EVALSHA"
        // This user may connect, SCAN and read INFO (so an empty `list` succeeds): what it lacks shows at the first script.
        ? [["inspect", "k"], ["release", "k", "--force"], ["exec", "--key", "k", "--", process.execPath, "-e", ""]]
        : [["inspect", "k"], ["list"], ["doctor"], ["exec", "--key", "k", "--", process.execPath, "-e", ""]];
      for (const args of commands) {
        const r = await cli([...args.slice(0, args.indexOf("--") < 0 ? args.length : args.indexOf("--")), "--redis", redis,
          ...(args.includes("--") ? args.slice(args.indexOf("--")) : [])]);
        assert.equal(r.code, 77, `${what}, ${args[0]}: exit ${r.code}, stderr ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /internal error/);
        // doctor states it in its checklist (stdout), the others on stderr.
        assert.match(r.stderr + r.stdout, /user and password|ACL user needs/, `${what}, ${args[0]}: a hint`);
      }
    }
  });
});
