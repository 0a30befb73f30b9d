/**
 * Ill-formed strings (a lone surrogate would reach Redis as U+FFFD, so two different keys would
 * name one lock) and strings over their limit in bytes of UTF-8 (what Redis stores, not UTF-16
 * code units) are refused with InvalidArgumentError before any I/O, at every public entry point:
 * the library's (MemoryRedis counts every command) and the CLI's (exit code 2, no connection).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidArgumentError, Surelock } from "../../src/index.js";
import { MemoryRedis } from "../../src/testing/index.js";
import { MAX_KEY_BYTES, MAX_OWNER_BYTES, MAX_PREFIX_BYTES } from "../../src/validate.js";
import { cli } from "../cli/support.js";

const LONE = "order:\uD800:1";
/** `bytes` bytes of UTF-8 in `bytes / 3` characters (3-byte "€" each, plus ASCII to make up the rest). */
const euros = (bytes: number): string => "€".repeat(Math.floor(bytes / 3)) + "x".repeat(bytes % 3);

/** Asserts a synchronous or asynchronous InvalidArgumentError naming `argument`. */
async function refused(argument: string, call: () => unknown): Promise<void> {
  let error: unknown;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof InvalidArgumentError, `${argument}: expected InvalidArgumentError, got ${String(error)}`);
  assert.equal(error.argument, argument);
}

describe("ill-formed and oversized strings are refused before any I/O", () => {
  it("at every library entry point that takes a key, an owner or a prefix", async () => {
    const redis = new MemoryRedis();
    const seen: string[] = [];
    redis.intercept((call) => { seen.push(call.name); return undefined; });
    const locks = new Surelock({ redis });
    const badKeys = [LONE, "\uDC00", euros(MAX_KEY_BYTES + 1)];
    const badOwners = [LONE, euros(MAX_OWNER_BYTES + 1)];
    assert.ok(euros(MAX_KEY_BYTES + 1).length < MAX_KEY_BYTES, "over the limit in bytes while under it in characters");
    for (const key of badKeys) {
      await refused("key", () => locks.mutex(key));
      await refused("key", () => locks.readWriteLock(key));
      await refused("key", () => locks.semaphore(key, { permits: 2 }));
      await refused("key", () => locks.withLock(key, () => 1));
      await refused("resource", () => locks.guard(key));
      await refused("key", () => locks.guard("fine").write(1n, "SET", key, "v"));
    }
    await refused("args[0]", () => locks.guard("fine").write(1n, "SET", "data", LONE));
    const sides = [locks.mutex("k"), locks.readWriteLock("k").read(), locks.readWriteLock("k").write(), locks.semaphore("k", { permits: 2 })];
    for (const owner of badOwners) {
      for (const side of sides) {
        await refused("options.owner", () => side.acquire({ owner }));
        await refused("options.owner", () => side.tryAcquire({ owner }));
        await refused("options.owner", () => side.withLock(() => 1, { owner }));
      }
    }
    for (const prefix of [LONE, euros(MAX_PREFIX_BYTES + 1)]) {
      await refused("options.prefix", () => new Surelock({ redis, prefix }));
    }
    assert.deepEqual(seen, [], "no command reached Redis");
    // At the limit exactly, in bytes: accepted, and the key reaches Redis as given.
    const atLimit = euros(MAX_KEY_BYTES);
    assert.equal(Buffer.byteLength(atLimit), MAX_KEY_BYTES);
    const lease = await locks.mutex(atLimit).acquire({ owner: euros(MAX_OWNER_BYTES) });
    assert.equal(await redis.duplicate().command(["HGET", `surelock:{${atLimit}}:lock`, "o"]), euros(MAX_OWNER_BYTES));
    await lease.release();
    await locks.close();
  });

  it("the CLI: a key or owner over its limit in bytes is a usage error (exit 2) before connecting", async () => {
    // Port 1: nothing listens there; a connection attempt would be exit 69, not 2.
    const nowhere = ["--redis", "redis://127.0.0.1:1"];
    const long = euros(MAX_KEY_BYTES + 1);
    for (const args of [["inspect", long], ["release", long, "--force"], ["exec", "--key", long, "--", "true"],
      ["exec", "--key", "k", "--owner", euros(MAX_OWNER_BYTES + 1), "--", "true"], ["inspect", "k", "--prefix", euros(MAX_PREFIX_BYTES + 1)]]) {
      const r = await cli([...nowhere, ...args]);
      assert.equal(r.code, 2, `${args[0]}: exit ${r.code}, stderr: ${r.stderr}`);
      assert.match(r.stderr, /bytes of well-formed UTF-8/);
    }
  });
});
