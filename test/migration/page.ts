/**
 * A migration guide, run as written: each program on the page (the other library's side and
 * surelock's side of every pair) against a real redis-server, its output compared with the
 * output the page shows. The programs are type-checked with every other docs block in
 * test/docs/snippets.test.ts.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { blocksOf, layOut, ROOT, runBlock, titleOf } from "../docs/snippets.js";

/** The tests of one guide; call it inside a describe() of the test file. */
export function testGuide(page: string): void {
  const dir = join(ROOT, ".tmp", "snippets", page.replace(/\W+/g, "-"));
  const blocks = blocksOf([page]).filter((b) => b.mode === "run");
  let server: RedisServer;

  before(async () => {
    layOut(dir, blocks);
    server = await startStandalone();
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("has surelock's side in every section, and every program states its output", () => {
    for (const section of new Set(blocks.map((b) => b.heading))) {
      assert.ok(blocks.some((b) => b.heading === section && b.code.includes('from "surelock"')), `${section} has surelock's side`);
    }
    assert.deepEqual(blocks.filter((b) => b.output === undefined).map(titleOf), []);
  });

  for (const block of blocks) {
    it(titleOf(block), async () => {
      await server.command("FLUSHALL");
      await runBlock(dir, block, server.url);
    });
  }
}
