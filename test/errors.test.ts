import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import * as src from "../src/index.js";

const require = createRequire(import.meta.url);

describe("errors", () => {
  it("every error has its stable code and extends SurelockError", () => {
    const cases: [src.SurelockError, string][] = [
      [new src.LockTimeoutError("k", 12, 10), "ERR_SURELOCK_TIMEOUT"],
      [new src.LockLostError("k", "taken"), "ERR_SURELOCK_LOCK_LOST"],
      [new src.LockNotHeldError("k", "released"), "ERR_SURELOCK_NOT_HELD"],
      [new src.QuorumError("k", "acquire", [{ node: "a", ok: false, error: new Error("down") }]), "ERR_SURELOCK_QUORUM"],
      [new src.InvalidArgumentError("ttl", -1, "a positive integer"), "ERR_SURELOCK_INVALID_ARGUMENT"],
      [new src.ConnectionError("down"), "ERR_SURELOCK_CONNECTION"],
      [new src.ClosedError(), "ERR_SURELOCK_CLOSED"],
    ];
    for (const [error, code] of cases) {
      assert.equal(error.code, code);
      assert.ok(error instanceof src.SurelockError);
      assert.ok(error instanceof Error);
      assert.equal(error.name, error.constructor.name);
    }
    assert.ok(!(new src.LockLostError("k", "taken") instanceof src.LockTimeoutError), "brands are per class");
  });

  it("LockTimeoutError carries how long it waited; QuorumError names each node", () => {
    const timeout = new src.LockTimeoutError("k", 1234.5, 1000);
    assert.equal(timeout.waitedMs, 1234.5);
    assert.equal(timeout.timeoutMs, 1000);
    const quorum = new src.QuorumError("k", "acquire", [
      { node: "127.0.0.1:1", ok: true }, { node: "127.0.0.1:2", ok: false, error: new Error("ECONNREFUSED") },
    ]);
    assert.match(quorum.message, /127\.0\.0\.1:2: ECONNREFUSED/);
    assert.equal(quorum.nodes.length, 2);
  });

  it("instanceof works across the ESM and the CommonJS build loaded in one process", async () => {
    const esm = (await import("surelock")) as unknown as typeof src;
    const cjs = require("surelock") as unknown as typeof src;
    assert.notEqual(esm.LockLostError, cjs.LockLostError, "two copies of the classes");
    const fromCjs = new cjs.LockLostError("k", "expired");
    assert.ok(fromCjs instanceof esm.LockLostError);
    assert.ok(fromCjs instanceof esm.SurelockError);
    assert.ok(fromCjs instanceof src.LockLostError);
    assert.ok(!(fromCjs instanceof esm.LockTimeoutError));
    assert.ok(new esm.ClosedError() instanceof cjs.ClosedError);
  });
});
