// The clock arithmetic of `surelock doctor`: offsets bounded by the round trip, spreads between nodes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { atLeast, clockOffset, clockSpread, parseTime, type TimeSample } from "../../src/cli/clock-offset.js";
import { checkClock } from "../../src/cli/doctor/clock-checks.js";
import { checkQuorumClocks } from "../../src/cli/doctor/quorum-checks.js";

/** A server whose clock is `offsetMs` ahead, read `readAtMs` into a round trip from `sentAtMs` to `receivedAtMs`. */
const sample = (sentAtMs: number, receivedAtMs: number, offsetMs: number, readAtMs = (receivedAtMs - sentAtMs) / 2): TimeSample =>
  ({ sentAtMs, receivedAtMs, serverUs: Math.round((sentAtMs + readAtMs + offsetMs) * 1000) });

void describe("clockOffset", () => {
  void it("a server read midway through the round trip: the offset exactly, bounded by half the round trip", () => {
    const o = clockOffset([sample(1_000_000, 1_000_004, 250)]);
    assert.equal(o.offsetMs, 250);
    assert.equal(o.boundMs, 2);
    assert.equal(o.rttMs, 4);
  });

  void it("a server read at either end of the round trip: the true offset stays within the bound", () => {
    for (const readAt of [0, 4]) {
      const o = clockOffset([sample(1_000_000, 1_000_004, -30, readAt)]);
      assert.ok(Math.abs(o.offsetMs - -30) <= o.boundMs + 1e-9, `read at +${readAt} ms: ${o.offsetMs} ± ${o.boundMs}`);
    }
  });

  void it("uses the sample with the shortest round trip (the tightest bound), whatever its place", () => {
    const o = clockOffset([sample(0, 40, 100, 35), sample(100, 100.5, 100), sample(200, 230, 100, 1)]);
    assert.equal(o.rttMs, 0.5);
    assert.equal(o.boundMs, 0.25);
    assert.ok(Math.abs(o.offsetMs - 100) < 1e-6);
  });

  void it("a server behind this host gives a negative offset", () => {
    assert.ok(Math.abs(clockOffset([sample(5_000, 5_002, -1_500)]).offsetMs + 1_500) < 1e-6);
  });

  void it("needs at least one sample", () => {
    assert.throws(() => clockOffset([]));
  });
});

void describe("parseTime", () => {
  void it("reads TIME's [seconds, microseconds] as µs, strings or integers", () => {
    assert.equal(parseTime(["1732010203", "40506"]), 1_732_010_203_040_506);
    assert.equal(parseTime([1732010203, 40506]), 1_732_010_203_040_506);
  });

  void it("refuses anything else", () => {
    for (const reply of [null, "1732010203", ["1", "2", "3"], ["x", "1"], ["1.5", "2"], [1.5, 2]]) assert.equal(parseTime(reply), undefined, JSON.stringify(reply));
  });
});

void describe("clockSpread and atLeast", () => {
  const offset = (offsetMs: number, boundMs: number) => ({ offsetMs, boundMs, rttMs: boundMs * 2 });

  void it("the widest pair, with both bounds added, and which node is ahead (this host's own offset cancels out)", () => {
    const s = clockSpread([
      { node: "a", offset: offset(5_000, 1) },
      { node: "b", offset: offset(5_400, 2) },
      { node: "c", offset: offset(4_900, 0.5) },
    ]);
    assert.deepEqual(s, { spreadMs: 500, boundMs: 2.5, ahead: "b", behind: "c" });
  });

  void it("nothing to compare with fewer than two nodes", () => {
    assert.equal(clockSpread([{ node: "a", offset: offset(1, 1) }]), undefined);
    assert.equal(clockSpread([]), undefined);
  });

  void it("atLeast: what the true value is at least, given the bound (a warning needs a provable excess)", () => {
    assert.equal(atLeast(1_500, 200), 1_300);
    assert.equal(atLeast(-1_500, 200), 1_300);
    assert.equal(atLeast(100, 200), 0);
  });
});

void describe("the clock checks against the counter retention", () => {
  const at = (node: string, offsetMs: number) => ({ node, offset: { offsetMs, boundMs: 1, rttMs: 2 } });

  void it("quorum clocks: apart by more than half the retention fails, by more than a second warns", () => {
    const apart = [at("a", 0), at("b", 120_000)];
    assert.equal(checkQuorumClocks(apart, 300_000)[0]?.status, "warn", "2 min apart, retention 5 min");
    const fail = checkQuorumClocks(apart, 180_000)[0];
    assert.equal(fail?.status, "fail", "2 min apart, retention 3 min");
    assert.match(fail?.detail ?? "", /half the counter retention \(3 min\)/);
    assert.equal(checkQuorumClocks([at("a", 0), at("b", 20)], 30)[0]?.status, "fail", "20 ms apart, retention 30 ms");
    assert.equal(checkQuorumClocks([at("a", 0), at("b", 0.5)], 300_000)[0]?.status, "ok");
  });

  void it("one server's clock: the warning names the retention it rests on", () => {
    const clock = { offsetMs: 5_000, boundMs: 1, rttMs: 2 };
    assert.match(checkClock(clock, "n", 600_000).detail, /steps back by more than the counter retention \(10 min\)/);
  });
});
