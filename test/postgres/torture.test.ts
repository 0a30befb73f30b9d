// A short PostgreSQL torture run (test/postgres/torture.ts) on a fixed seed: four worker processes,
// each a Surelock on a pool of its own behind a proxy of its own, for 25 s while the nemesis injects
// each of its faults at least once (a backend terminated, a worker's connections blackholed, the
// server SIGKILLed and started again, a worker SIGSTOPped past its ttl, a backend SIGSTOPped). The
// Redis torture's checkers must find nothing: no overlap of believed holds, no semaphore over its
// permits, fenced registers in token order with every acknowledged write, every call within its
// bound, progress between faults, every failure a surelock error.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FAULTS, runTorture } from "./torture.js";

describe("PostgreSQL torture (25 s, every fault)", { timeout: 240_000 }, () => {
  it("seed 7: no violation, each fault injected, sections and fenced writes made", async () => {
    const lines: string[] = [];
    const r = await runTorture({ seconds: 25, seed: 7, faultEveryMs: 1_000, log: (l) => lines.push(l) });
    const context = `\n${lines.join("\n")}\n${JSON.stringify({ faults: r.faults, sections: r.sections, calls: r.calls, writes: r.writes })}`;
    assert.deepEqual(r.violations.map((v) => `${v.checker}: ${v.message}`), [], context);
    for (const f of FAULTS) assert.ok(r.faults[f] >= 1, `fault ${f} never injected${context}`);
    assert.ok(r.sections >= 50, `only ${r.sections} sections${context}`);
    assert.ok(r.writes.written >= 25, `only ${r.writes.written} fenced writes${context}`);
    // Every acknowledged write is in the log (the checker says which is missing); a write whose
    // answer was lost may be there too, never more than those.
    assert.ok(r.writes.inLog >= r.writes.written && r.writes.inLog <= r.writes.written + r.writes.unknown, context);
  });
});
