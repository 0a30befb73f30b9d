// docs/migrating/from-redlock.md, run as written: each program on the page (redlock 4, redlock
// 5 beta, @sesamecare-oss/redlock, and surelock's side of each pair) against a real
// redis-server, its output compared with the output the page shows. (They are type-checked with
// every other docs block in test/docs/snippets.test.ts.)
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { blocksOf, layOut, ROOT, runBlock, titleOf } from "../docs/snippets.js";
import assert from "node:assert/strict";

const PAGE = "docs/migrating/from-redlock.md";
const DIR = join(ROOT, ".tmp", "snippets", "from-redlock");

describe(PAGE, () => {
  const blocks = blocksOf([PAGE]).filter((b) => b.mode === "run");
  let server: RedisServer;

  before(async () => {
    layOut(DIR, blocks);
    server = await startStandalone();
  });
  after(async () => {
    await server?.stop();
    rmSync(DIR, { recursive: true, force: true });
  });

  it("has a surelock program for every section, and every program states its output", () => {
    const sections = new Set(blocks.map((b) => b.heading));
    for (const section of sections) {
      assert.ok(blocks.some((b) => b.heading === section && b.code.includes('from "surelock"')), `${section} has surelock's side`);
    }
    assert.deepEqual(blocks.filter((b) => b.output === undefined).map(titleOf), []);
  });

  for (const block of blocks) {
    it(titleOf(block), async () => {
      await server.command("FLUSHALL");
      await runBlock(DIR, block, server.url);
    });
  }
});
