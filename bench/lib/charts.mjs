// The four charts the README shows, from one results object.
import { barChart } from "./svg.mjs";
import { int, ms } from "./report.mjs";

const kindOf = (id) => (id.startsWith("surelock") ? "surelock" : id.startsWith("floor") ? "floor" : "peer");
const ok = (x) => typeof x === "number" && Number.isFinite(x);
const failure = (r) => (r?.error ? `error: ${String(r.error).slice(0, 40)}` : r?.skipped ? "n/a" : "no sample");

function machineLine(results) {
  const m = results.machine;
  return `${m.date.slice(0, 10)} · ${m.cores} cores (${m.cpuModel}) · Node ${m.node} · Redis ${m.redis}${results.options.quick ? " · --quick" : ""}`;
}

function contended(results, name, title) {
  const rows = results.workloads[name]?.rows ?? [];
  const bars = (field, unit) => rows.map((r) => ({
    label: r.label,
    value: r[field],
    kind: kindOf(r.id),
    text: ok(r[field]) ? `${int(r[field])}${unit}` : failure(r),
  }));
  return barChart({
    title,
    subtitle: machineLine(results),
    panels: [
      { title: "Holder changes per second: sections by a different worker than the last (more is better)", bars: bars("holderChangesPerSec", "/s") },
      { title: "Critical sections per second (a releaser that re-takes its own lock inflates this one)", bars: bars("sectionsPerSec", "/s") },
    ],
    footnote: "Same workload, same redis-server, one run; \"fast\" = the library's retry delay set to 1-2 ms; floor = SET NX PX retried every 1 ms. npm run bench",
  });
}

export function charts(results) {
  const out = {};
  if (results.workloads.W2) out["w2-holder-changes.svg"] = contended(results, "W2", "W2: 10 workers on one key in one process, read-modify-write counter");
  if (results.workloads.W3) out["w3-holder-changes.svg"] = contended(results, "W3", "W3: 4 processes x 5 workers on one key, read-modify-write counter");
  if (results.workloads.W1) {
    const rows = results.workloads.W1.rows;
    const panel = (c, title) => ({
      title,
      bars: rows.map((r) => ({
        label: r.label,
        value: r[c]?.opsPerSec,
        kind: kindOf(r.id),
        text: ok(r[c]?.opsPerSec) ? `${int(r[c].opsPerSec)}/s` : failure(r[c]),
      })),
    });
    out["w1-throughput.svg"] = barChart({
      title: "W1: uncontended acquire + release per second (more is better)",
      subtitle: machineLine(results),
      panels: [panel("c1", "1 loop"), panel("c50", "50 concurrent loops, each on its own key")],
      footnote: "floor = bare SET NX PX + compare-and-delete on the same ioredis client (no renewal, no queue). npm run bench",
    });
  }
  const latencyPanels = [];
  const latency = (title, rows, p50, p99) => ({
    title,
    bars: rows.map((r) => ({
      label: r.label,
      value: r[p50],
      value2: r[p99],
      kind: kindOf(r.id),
      text: ok(r[p50]) ? `p50 ${ms(r[p50])} · p99 ${ms(r[p99])} ms` : failure(r),
    })),
  });
  if (results.workloads.W1) {
    const rows = results.workloads.W1.rows.map((r) => ({ id: r.id, label: r.label, ...(r.c1 ?? {}) }));
    latencyPanels.push(latency("W1 acquire, uncontended, 1 loop", rows, "acquireP50Ms", "acquireP99Ms"));
  }
  if (results.workloads.W2) latencyPanels.push(latency("W2 handoff: release to the next acquire by another worker, one process", results.workloads.W2.rows, "handoffP50Ms", "handoffP99Ms"));
  if (results.workloads.W3) latencyPanels.push(latency("W3 handoff across 4 processes", results.workloads.W3.rows, "handoffP50Ms", "handoffP99Ms"));
  if (results.workloads.W4) {
    const { rows, linkDelayMs } = results.workloads.W4;
    const on = (network) => rows.filter((r) => r.network === network);
    latencyPanels.push(latency("W4 acquire over 5 primaries (quorum) and single node, loopback", on("loopback"), "acquireP50Ms", "acquireP99Ms"));
    latencyPanels.push(latency(`W4 the same over a simulated network (+${linkDelayMs} ms each way)`, on("delayed"), "acquireP50Ms", "acquireP99Ms"));
  }
  if (latencyPanels.length > 0) {
    out["latency.svg"] = barChart({
      title: "Latency in ms (less is better): p50 solid, p99 pale",
      subtitle: machineLine(results),
      panels: latencyPanels,
      footnote: "Each panel has its own scale. A handoff counts only when another worker gets the lock: see holder changes/s for how often. npm run bench",
    });
  }
  return out;
}
