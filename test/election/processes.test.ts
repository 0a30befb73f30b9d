/** Leader election across processes: one leader at a time, and a paused leader knows it lost before another leads. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Harness, standaloneSuite, within } from "../helpers/fixtures.js";
import type { RedisServer } from "../helpers/redis-topology.js";
import { runFixture } from "../fixtures/processes.js";
import { Observed } from "./support.js";

describe("leader election across processes", () => {
  let server: RedisServer;
  let h: Harness;
  standaloneSuite((s, harness) => { server = s; h = harness; });

  it("3 processes × 6 terms: one leader at a time (no lost update of a counter), each new leader with a larger token", async () => {
    const counter = "test:{terms}:counter";
    const children = [0, 1, 2].map(() => runFixture("candidate", [server.port, "terms", 2_000, 6, 15, counter]));
    const results = await within(30_000, Promise.all(children.map((c) => c.done)));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const terms = results.flatMap((r) => r.stdout.split("\n").filter((l) => l.startsWith("count ")))
      .map((l) => l.split(" ")).map(([, value, token]) => ({ value: Number(value), token: BigInt(token as string) }))
      .sort((a, b) => a.value - b.value);
    assert.deepEqual(terms.map((t) => t.value), Array.from({ length: 18 }, (_, i) => i + 1), "every term saw the one before it");
    for (let i = 1; i < terms.length; i++) assert.ok((terms[i] as { token: bigint }).token > (terms[i - 1] as { token: bigint }).token, `term ${i + 1}'s token`);
    assert.equal(await server.command("GET", counter), "18");
    await server.command("DEL", counter);
  });

  it("a leader paused (SIGSTOP) past its lease: its validity ran out before another was elected, it learns so on waking, and its late write is refused", async () => {
    const ttl = 500;
    const paused = runFixture("paused-leader", [server.port, "paused", ttl, "report"]);
    const lines: string[] = [];
    const seen = (prefix: string): Promise<string> => new Promise((resolve) => {
      const found = lines.find((l) => l.startsWith(prefix));
      if (found) resolve(found);
      paused.lines((l) => { lines.push(l); if (l.startsWith(prefix)) resolve(l); });
    });
    const first = await within(5_000, seen("elected"));
    const watcher = new Observed(h.locks().election("paused"));
    await watcher.next((l) => l !== null);
    paused.child.kill("SIGSTOP");
    try {
      const locks = h.locks({ ttl: 10_000 });
      const next = locks.election("paused");
      const lease = await within(3 * ttl + 2_000, next.campaign({ value: "next" }), "the next campaign");
      const electedAt = performance.timeOrigin + performance.now();
      assert.ok(lease.fencingToken > BigInt(first.split(" ")[1] as string));
      assert.equal((await locks.guard("report").write(lease.fencingToken, "SET", "{report}:data", "fresh")).written, true);
      await watcher.next((l) => l?.value === "next");
      paused.child.kill("SIGCONT");
      const [, reason, unsafeAt] = (await within(5_000, seen("lost"))).split(" ");
      assert.equal(reason, "expired");
      const marginMs = electedAt - Number(unsafeAt);
      console.log(`# the paused leader's validity ended ${marginMs.toFixed(1)} ms before the next leader was elected (ttl ${ttl} ms)`);
      assert.ok(marginMs > 0, `the paused leader's validity ended ${marginMs.toFixed(1)} ms before the next was elected`);
      assert.equal(await within(5_000, seen("stale-write")), "stale-write false");
      assert.equal(await server.command("GET", "{report}:data"), "fresh");
      assert.equal(lease.held, true, "the new leader is untouched");
      // Observers never saw the old leader come back.
      assert.deepEqual(watcher.log.slice(-1), [`${lease.owner}=next`]);
      await next.resign();
      await watcher.stop();
    } finally {
      paused.child.kill("SIGCONT");
      await paused.done;
    }
  });
});
