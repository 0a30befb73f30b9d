/**
 * The layer rules (scripts/layers.mjs, enforced by `npm run lint`): every source file has a layer,
 * and the lint really refuses an import that goes up the chain or past a side's list while
 * letting the allowed ones through.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ESLint } from "eslint";
// @ts-expect-error: a plain ES module without declarations; its shapes are checked where they are used.
import * as layers from "../scripts/layers.mjs";

const { layerOf, sourceFiles } = layers as {
  layerOf(file: string): { name: string };
  sourceFiles(root: string): string[];
};

const eslint = new ESLint({
  // Only the import rule is under test: no type information needed, which keeps this fast.
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } }, rules: { "@typescript-eslint/no-floating-promises": "off" } },
});

/** The layer-rule messages for `code` linted as if it were `file` (an existing file, so the config has a block for it). */
async function refusals(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: file });
  assert.ok(result);
  return result.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("layer rules", () => {
  it("every TypeScript file under src/ belongs to exactly one layer or side", () => {
    const files = sourceFiles(".");
    assert.ok(files.length > 50);
    for (const file of files) assert.doesNotThrow(() => layerOf(file), file);
  });

  it("lint refuses an import up the chain and names both places", async () => {
    const [message, ...more] = await refusals("src/store/single-store.ts", 'import { Surelock } from "../surelock.js";\nexport const s = Surelock;\n');
    assert.equal(more.length, 0);
    assert.match(message ?? "", /store may not import src\/surelock\.ts \(facade\)/);
  });

  it("lint lets an import down the chain through", async () => {
    assert.deepEqual(await refusals("src/lease/lease.ts", 'import type { Store } from "../store/types.js";\nexport type S = Store;\n'), []);
    assert.deepEqual(await refusals("src/surelock.ts", 'import { scripts } from "./scripts/index.js";\nexport const s = scripts;\n'), []);
  });

  it("a primitive reaches the protocol and the quorum's voting only through the store's typed operations", async () => {
    const file = "src/primitives/latch.ts";
    assert.equal((await refusals(file, 'import { scripts } from "../scripts/index.js";\nexport const s = scripts;\n')).length, 1);
    assert.equal((await refusals(file, 'import { majorityOf } from "../quorum/votes.js";\nexport const m = majorityOf;\n')).length, 1);
    assert.deepEqual(await refusals(file, 'import type { Store } from "../store/types.js";\nexport type S = Store;\n'), []);
  });

  it("the protocol encodes the store's requests, and the stores dispatch to it: never the other way", async () => {
    const file = "src/protocol/exclusive.ts";
    assert.deepEqual(await refusals(file, 'import type { AcquireCall } from "../store/types.js";\nexport type C = AcquireCall;\n'), []);
    assert.equal((await refusals(file, 'import { SingleStore } from "../store/single-store.js";\nexport const s = SingleStore;\n')).length, 1);
    assert.deepEqual(await refusals("src/store/single-store.ts", 'import { scripts } from "../protocol/scripts.js";\nexport const s = scripts;\n'), []);
    // A primitive reads the channel messages' grammar (an election's watchers), nothing else of the protocol.
    assert.deepEqual(await refusals("src/primitives/election.ts", 'import { isWatchNews } from "../protocol/channel.js";\nexport const w = isWatchNews;\n'), []);
    assert.equal((await refusals("src/primitives/election.ts", 'import { scripts } from "../protocol/scripts.js";\nexport const s = scripts;\n')).length, 1);
  });

  it("the chain has no exception: the protocol's scripts take nothing from the transport above them", async () => {
    const typeOnly = 'import type { RedisAdapter } from "../adapters/types.js";\nexport type A = RedisAdapter;\n';
    assert.equal((await refusals("src/scripts/binding.ts", typeOnly)).length, 1);
  });

  it("the library never imports surelock/testing or the CLI", async () => {
    assert.equal((await refusals("src/index.ts", 'export { MemoryRedis } from "./testing/index.js";\n')).length, 1);
    assert.equal((await refusals("src/errors.ts", 'import { help } from "./cli/help.js";\nexport const h = help;\n')).length, 1);
  });

  it("surelock/testing takes the adapter contract and the public API, nothing else", async () => {
    const file = "src/testing/memory-adapter.ts";
    assert.deepEqual(await refusals(file, 'import type { RedisAdapter } from "../adapters/types.js";\nexport type A = RedisAdapter;\n'), []);
    assert.deepEqual(await refusals(file, 'import { Surelock } from "../index.js";\nexport const s = Surelock;\n'), []);
    assert.equal((await refusals(file, 'import { Endpoint } from "../adapters/endpoint.js";\nexport const e = Endpoint;\n')).length, 1);
    assert.equal((await refusals("src/testing/redis/keyspace.ts", 'import { KeySpace } from "../../keys.js";\nexport const k = KeySpace;\n')).length, 1);
  });

  it("the adapter kit takes the adapter contract and the public API; the library never imports it", async () => {
    const file = "src/adapter-kit/verify-adapter.ts";
    assert.deepEqual(await refusals(file, 'import { Surelock } from "../index.js";\nexport const s = Surelock;\n'), []);
    assert.equal((await refusals(file, 'import { Endpoint } from "../adapters/endpoint.js";\nexport const e = Endpoint;\n')).length, 1);
    assert.equal((await refusals(file, 'import { MemoryRedis } from "../testing/index.js";\nexport const m = MemoryRedis;\n')).length, 1);
    assert.equal((await refusals("src/index.ts", 'export { verifyAdapter } from "./adapter-kit/index.js";\n')).length, 1);
  });

  it("the CLI takes the public API and its named internals, nothing else", async () => {
    const file = "src/cli/inspect.ts";
    assert.deepEqual(await refusals(file, 'import { KeySpace } from "../keys.js";\nexport const k = KeySpace;\n'), []);
    const [message] = await refusals(file, 'import { SingleStore } from "../store/single-store.js";\nexport const s = SingleStore;\n');
    assert.match(message ?? "", /cli may not import src\/store\/ \(store\); it may import only src\/cli\/ and src\/index\.ts/);
  });
});
