// The first table of the results: each goal of issue 16 next to the figures of this run that
// judge it (surelock, the floor, the best peer), and whether the goal is met. Only figures the
// run measured; a workload that did not run is left out.
import { fixed, int, ms } from "./report.mjs";

const ok = (x) => typeof x === "number" && Number.isFinite(x);
const isPeer = (r) => !r.id.startsWith("surelock") && !r.id.startsWith("floor") && !r.error && !r.skipped;

/** The peer row with the best `value` (highest, or lowest when `lower`), as "figure label". */
function bestPeer(rows, value, show, lower = false) {
  let best;
  for (const r of rows.filter(isPeer)) {
    const v = value(r);
    if (!ok(v)) continue;
    if (!best || (lower ? v < value(best) : v > value(best))) best = r;
  }
  return best ? `${show(best)} ${best.label}` : "–";
}

const verdict = (met) => (met === undefined ? "–" : met ? "yes" : "**no**");

function w1Lines(w) {
  const me = w.rows.find((r) => r.id === "surelock:default");
  const floor = w.rows.find((r) => r.id === "floor:default");
  return [["c1", "1 loop"], ["c50", "50 loops"]].map(([c, what]) => {
    const mine = me?.[c]?.opsPerSec;
    const base = floor?.[c]?.opsPerSec;
    const r = ok(mine) && ok(base) ? mine / base : undefined;
    return [
      `W1 uncontended acquire+release/s, ${what}`,
      ok(mine) ? `${int(mine)} (${fixed(r, 2)}× floor)` : "–",
      int(base),
      bestPeer(w.rows, (x) => x[c]?.opsPerSec, (x) => int(x[c].opsPerSec)),
      "≥ 0.95× floor",
      verdict(r === undefined ? undefined : r >= 0.95),
    ];
  });
}

function contendedLine(w, what, goalChanges, goalWaitMs) {
  const me = w.rows.find((r) => r.id === "surelock:default");
  const floor = w.rows.find((r) => r.id === "floor:default");
  const show = (r) => (r && ok(r.holderChangesPerSec) ? `${int(r.holderChangesPerSec)} (${ms(r.longestWaitMs)} ms)` : "–");
  const met = me && ok(me.holderChangesPerSec)
    ? me.holderChangesPerSec >= goalChanges && (goalWaitMs === undefined || me.longestWaitMs <= goalWaitMs) && me.lostUpdates === 0
    : undefined;
  return [
    `${what}: holder changes/s (longest wait)`,
    show(me),
    show(floor),
    bestPeer(w.rows, (x) => x.holderChangesPerSec, show),
    `≥ ${int(goalChanges)}${goalWaitMs === undefined ? "" : ` (≤ ${goalWaitMs} ms)`}, no lost update`,
    verdict(met),
  ];
}

function w4Lines(w) {
  return ["loopback", "delayed"].map((network) => {
    const on = w.rows.filter((r) => r.network === network && r.nodes === 5);
    const me = on.find((r) => r.id === "surelock:quorum");
    const floor = on.find((r) => r.id === "floor:quorum");
    const r = me && floor && ok(me.cycleP50Ms) && ok(floor.cycleP50Ms) ? me.cycleP50Ms / floor.cycleP50Ms : undefined;
    return [
      `W4 quorum of 5, acquire+release p50, ${network === "loopback" ? "loopback" : `+${w.linkDelayMs} ms each way`}`,
      me && ok(me.cycleP50Ms) ? `${ms(me.cycleP50Ms)} ms (${fixed(r, 2)}× floor)` : "–",
      floor ? `${ms(floor.cycleP50Ms)} ms` : "–",
      bestPeer(on, (x) => x.cycleP50Ms, (x) => `${ms(x.cycleP50Ms)} ms`, true),
      "≤ 1.15× floor",
      verdict(r === undefined ? undefined : r <= 1.15),
    ];
  });
}

function w5Lines(w) {
  const lines = [];
  for (const leases of w.sizes ?? []) {
    const rows = w.rows.filter((r) => r.leases === leases);
    const me = rows.find((r) => r.id === "surelock:default" && !r.error);
    // A peer that lost its leases stopped renewing them: it is no example to beat.
    const kept = rows.filter((r) => r.lost === 0);
    const lost = (r) => (r.lost > 0 ? `; **lost ${int(r.lost)} of ${int(r.held)}**` : "");
    const blocked = (r) => `${ms(r.pingDuringBurstsMaxMs)} ms (p99 ${ms(r.pingDuringBurstsP99Ms)}; outside bursts max ${ms(r.pingOutsideBurstsMaxMs)})`;
    const longest = (r) => (r.slowScriptCalls ? `${ms(r.longestScriptCallMs)} ms` : `< ${w.slowUs / 1000} ms`);
    lines.push([
      `W5 ${int(leases)} held leases: bystander PING max during renewal bursts`,
      me ? `${blocked(me)}; longest script call ${longest(me)}; ${fixed(me.scriptCallsPerBurst, 1)} script calls per burst${lost(me)}` : "–",
      "—",
      bestPeer(kept, (x) => x.pingDuringBurstsMaxMs, (x) => `${blocked(x)}; longest script call ${longest(x)}`, true),
      "≤ 2 ms, one round trip per node per tick, no lease lost",
      verdict(me ? me.pingDuringBurstsMaxMs <= 2 && me.lost === 0 : undefined),
    ]);
    lines.push([
      `W5 ${int(leases)} held leases: client RSS per lease`,
      me ? `${int(me.rssPerLeaseBytes)} B (heap ${int(me.heapPerLeaseBytes)} B)` : "–",
      "—",
      bestPeer(kept, (x) => x.rssPerLeaseBytes, (x) => `${int(x.rssPerLeaseBytes)} B`, true),
      "< 1 KB",
      verdict(me ? me.rssPerLeaseBytes < 1024 : undefined),
    ]);
  }
  return lines;
}

function w6Line(w) {
  const me = w.rows.find((r) => r.id === "surelock:default" && !r.error);
  const floor = w.rows.find((r) => r.id === "floor:default" && !r.error);
  const show = (r) => `${fixed(r.dayAverageBytesPerKey, 2)} B`;
  return [
    "W6 distinct keys: Redis memory kept per released key, averaged over a day",
    me ? `${show(me)} (${fixed(me.keptBytesPerKey, 0)} B right after)` : "–",
    floor ? show(floor) : "–",
    bestPeer(w.rows, (x) => x.dayAverageBytesPerKey, show, true),
    "≤ 1 byte",
    verdict(me ? me.dayAverageBytesPerKey <= 1 : undefined),
  ];
}

/** The markdown table, or "" when none of the workloads ran. */
export function scorecard(results) {
  const w = results.workloads;
  const lines = [];
  if (w.W1) lines.push(...w1Lines(w.W1));
  if (w.W2) lines.push(contendedLine(w.W2, "W2 10 workers, 1 process", 3000));
  if (w.W3) lines.push(contendedLine(w.W3, "W3 4 processes × 5", 2500, 25));
  if (w.W4) lines.push(...w4Lines(w.W4));
  if (w.W5) lines.push(...w5Lines(w.W5));
  if (w.W6) lines.push(w6Line(w.W6));
  if (lines.length === 0) return "";
  const header = ["workload", "surelock", "floor", "best peer", "goal (issue 16)", "met"];
  return [
    `| ${header.join(" | ")} |`,
    `|---|${header.slice(1).map(() => "---:").join("|")}|`,
    ...lines.map((l) => `| ${l.join(" | ")} |`),
  ].join("\n");
}
