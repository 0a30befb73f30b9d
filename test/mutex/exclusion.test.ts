import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { assertEveryKeyExpires } from "../helpers/fixtures.js";
import { startStandalone, type RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";

describe("mutual exclusion across processes", () => {
  let server: RedisServer;
  before(async () => { server = await startStandalone(); });
  after(() => server.stop());

  it("3 processes x 4 workers x 170 read-modify-write increments: the count is exact and tokens rise in section order", async () => {
    const processes = 3, workers = 4, sections = 170; // 2,040 sections
    const runs = Array.from({ length: processes }, () => runFixture("counter-worker", [server.port, "exclusion", workers, sections]).done);
    const results = await Promise.all(runs);
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const total = processes * workers * sections;
    assert.equal(Number(await server.command("GET", "test:{exclusion}:counter")), total, "no lost update");

    const sectionsSeen = results.flatMap((r) => r.stdout.trim().split("\n")).map((line) => {
      const [count, token] = line.split(" ");
      return { count: Number(count), token: BigInt(token!) };
    });
    assert.equal(sectionsSeen.length, total);
    sectionsSeen.sort((a, b) => a.count - b.count);
    sectionsSeen.forEach((s, i) => assert.equal(s.count, i + 1, "each count written exactly once"));
    for (let i = 1; i < sectionsSeen.length; i++) {
      assert.ok(sectionsSeen[i]!.token > sectionsSeen[i - 1]!.token, `token of section ${i + 1} rises`);
    }
    await assertEveryKeyExpires(server);
  });
});
