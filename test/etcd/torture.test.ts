// A short torture run on etcd (test/etcd/torture.ts; 10 minutes of it by hand, see there): every
// fault in turn (the leader killed, a member partitioned, a client's keep-alives stalled past its
// TTL) while stores contend; no overlap of believed holds, no fenced write out of order.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runTorture } from "./torture.js";

describe("etcd torture (short)", () => {
  it("25 s with each fault: no overlap, the fenced counter exact, tokens rising in commit order", { timeout: 240_000 }, async (t) => {
    const r = await runTorture({ seconds: 25, stores: 3, workers: 2, seed: 7, cycle: ["stall", "partition", "kill"] });
    t.diagnostic(`${r.sections} sections, ${r.landed} fenced writes; faults ${JSON.stringify(r.faults)}; failures ${JSON.stringify(r.failures)}`);
    assert.deepEqual(r.violations, []);
    assert.ok(r.faults.kill >= 1 && r.faults.partition >= 1 && r.faults.stall >= 1, `every fault injected: ${JSON.stringify(r.faults)}`);
    assert.ok(r.landed > 0, "progress");
    assert.equal(r.counter, r.landed);
  });
});
