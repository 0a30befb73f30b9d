// Every code block in README.md and docs/ is a program that type-checks and runs as written,
// unless its info string says otherwise. The markers, as test/docs/extract.ts defines them:
//   ```ts              a whole program: type-checked (NodeNext, strict) and run with REDIS_URL
//   ```js              the same, checked as JavaScript (no noImplicitAny: for untyped libraries)
//   ```ts fragment     a piece of a program: neither (use it only for that, honestly)
//   ```ts no-run       needs a deployment a test machine lacks (Sentinel, Cluster): checked only
//   ```ts file=PATH    the repository file PATH, verbatim; other blocks import "./<name>.js"
//   ```ts imports=A:B  imports package A, installed here as B (redlock 5 beta is redlock5)
//   ```text output     after a program: what it prints (`...` matches any text in a line)
// The migration guides' programs run in test/migration/ (pair by pair); they are type-checked here.
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import type { Block } from "./extract.js";
import { blocksOf, docPages, layOut, ROOT, runBlock, titleOf, typeCheck, type Problem } from "./snippets.js";

/**
 * Blocks known to fail (none today): each entry must keep failing the way it says; once fixed,
 * this test says so and the entry goes. Found by the block's first line.
 */
const KNOWN_BROKEN: readonly { doc: string; firstLine: string; fails: RegExp; why: string }[] = [
];

const DIR = join(ROOT, ".tmp", "snippets", "docs");

describe("docs code blocks", () => {
  const blocks = blocksOf(docPages());
  const broken = (b: Block) => KNOWN_BROKEN.find((k) => k.doc === b.doc && b.code.split("\n")[0] === k.firstLine);
  let server: RedisServer;
  let byFile: Map<string, Block>;

  before(async () => {
    byFile = layOut(DIR, blocks);
    server = await startStandalone();
  });
  after(async () => {
    await server?.stop();
    rmSync(DIR, { recursive: true, force: true });
  });

  it("finds blocks of every kind (the extractor sees the pages as they are written)", () => {
    const modes = new Set(blocks.map((b) => b.mode));
    for (const mode of ["run", "fragment", "no-run", "file"] as const) assert.ok(modes.has(mode), `some block is ${mode}`);
    assert.ok(blocks.some((b) => b.output !== undefined), "some block states its output");
  });

  it("every block that is not a fragment type-checks, all in one tsc program", async () => {
    const problems = await typeCheck(DIR, byFile);
    const known = (p: Problem) => (p.block ? broken(p.block) : undefined);
    const unexpected = problems.filter((p) => !known(p));
    assert.deepEqual(unexpected.map((p) => `${p.where}: ${p.message}`), []);
    for (const k of KNOWN_BROKEN) {
      assert.ok(blocks.some((b) => broken(b) === k), `${k.doc}: no block starts with ${JSON.stringify(k.firstLine)} any more: drop it from KNOWN_BROKEN`);
      const its = problems.filter((p) => known(p) === k);
      assert.ok(its.some((p) => k.fails.test(p.message)), `${k.doc} (${k.why}) no longer fails that way: drop it from KNOWN_BROKEN\n${its.map((p) => p.message).join("\n")}`);
    }
  });

  it("file= blocks are exactly the files they name", () => {
    for (const b of blocks.filter((x) => x.mode === "file")) {
      assert.equal(`${b.code}\n`, readFileSync(join(ROOT, b.file as string), "utf8"), `${b.doc}:${b.line} differs from ${b.file}`);
    }
  });

  describe("every runnable block runs against a throwaway redis-server", () => {
    for (const block of blocks.filter((b) => b.mode === "run" && !b.doc.startsWith("docs/migrating/") && !broken(b))) {
      it(titleOf(block), async () => {
        await server.command("FLUSHALL");
        await runBlock(DIR, block, server.url);
      });
    }
  });
});
