// Markdown tables, one per workload, with ratios surelock / peer.

const n = (x) => typeof x === "number" && Number.isFinite(x);

export function int(x) {
  return n(x) ? Math.round(x).toLocaleString("en-US") : "–";
}

/** Milliseconds with sensible precision: 0.123, 1.23, 12.3, 123. */
export function ms(x) {
  if (!n(x)) return "–";
  if (x < 1) return x.toFixed(3);
  if (x < 10) return x.toFixed(2);
  if (x < 100) return x.toFixed(1);
  return Math.round(x).toLocaleString("en-US");
}

export function fixed(x, digits = 2) {
  return n(x) ? x.toFixed(digits) : "–";
}

/** surelock's figure divided by the row's: "3.2×"; blank on surelock's own row. */
export function ratio(mine, theirs) {
  if (!n(mine) || !n(theirs) || theirs === 0) return "–";
  const r = mine / theirs;
  return `${r >= 100 ? Math.round(r) : r >= 10 ? r.toFixed(1) : r >= 1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}

function table(header, rows) {
  const lines = [`| ${header.join(" | ")} |`, `|${header.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const r of rows) lines.push(`| ${r.join(" | ")} |`);
  return lines.join("\n");
}

const failed = (row) => row?.error ?? row?.skipped;

export function w1Table(result) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  const part = (c, title) => {
    const rows = result.rows.map((r) => {
      const x = r[c];
      if (failed(x)) return [r.label, `error: ${failed(x)}`, "", "", "", "", "", ""];
      return [
        r.label, int(x.opsPerSec), ms(x.acquireP50Ms), ms(x.acquireP99Ms), int(x.clientCpuUsPerCycle), int(x.redisCpuUsPerCycle),
        fixed(x.redisCommandsPerCycle, 1), r === me ? "" : ratio(me?.[c]?.opsPerSec, x.opsPerSec),
      ];
    });
    return `${title}\n\n${table(
      ["library", "ops/s", "acquire p50 ms", "acquire p99 ms", "client CPU µs/op", "Redis CPU µs/op", "Redis commands/op", "surelock/this ops/s"],
      rows,
    )}`;
  };
  return `${part("c1", "**1 loop**")}\n\n${part("c50", "**50 concurrent loops**")}`;
}

export function contendedTable(result, { counter = false } = {}) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  const rows = result.rows.map((r) => {
    if (failed(r)) return [r.label, `error: ${failed(r)}`, ...Array(counter ? 10 : 9).fill("")];
    const cells = [
      r.label,
      int(r.sectionsPerSec),
      int(r.holderChangesPerSec),
      ms(r.handoffP50Ms),
      ms(r.handoffP99Ms),
      ms(r.longestWaitMs),
      fixed(r.jain, 3),
      int(r.acquireErrors),
    ];
    if (counter) cells.push(r.lostUpdates === 0 ? "0" : `**${r.lostUpdates} LOST**`);
    cells.push(
      r === me ? "" : ratio(me?.holderChangesPerSec, r.holderChangesPerSec),
      r === me ? "" : ratio(me?.sectionsPerSec, r.sectionsPerSec),
      r === me ? "" : ratio(me?.handoffP50Ms, r.handoffP50Ms),
    );
    return cells;
  });
  const header = [
    "library", "sections/s", "holder changes/s", "handoff p50 ms", "handoff p99 ms", "longest wait ms", "Jain", "acquire errors",
  ];
  if (counter) header.push("lost updates");
  header.push("surelock/this changes/s", "surelock/this sections/s", "surelock/this handoff p50");
  return table(header, rows);
}

export function w4Table(result) {
  const mine = (network) => result.rows.find((r) => r.id === "surelock:quorum" && r.network === network);
  return table(
    ["library", "network", "nodes", "ops/s", "acquire p50 ms", "acquire p99 ms", "surelock quorum/this p50", "surelock quorum/this p99"],
    result.rows.map((r) => {
      const me = mine(r.network);
      const network = r.network === "delayed" ? `+${result.linkDelayMs} ms each way` : "loopback";
      return failed(r)
        ? [r.label, network, String(r.nodes), `error: ${failed(r)}`, "", "", "", ""]
        : [r.label, network, String(r.nodes), int(r.opsPerSec), ms(r.acquireP50Ms), ms(r.acquireP99Ms),
          r === me ? "" : ratio(me?.acquireP50Ms, r.acquireP50Ms), r === me ? "" : ratio(me?.acquireP99Ms, r.acquireP99Ms)];
    }),
  );
}

export function w5Table(result) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  return table(
    ["library", "leases held", "EVALSHA/s", "all commands/s", "Redis CPU %", "µs per script call", "bystander PING p99 / max ms", "heap Δ MB", "RSS Δ MB", "lost", "surelock/this EVALSHA/s", "surelock/this commands/s", "surelock/this Redis CPU"],
    result.rows.map((r) => failed(r)
      ? [r.label, `n/a: ${failed(r)}`, "", "", "", "", "", "", "", "", "", "", ""]
      : [r.label, int(r.held), r.evalshaPerSec >= 100 ? int(r.evalshaPerSec) : fixed(r.evalshaPerSec, 1), int(r.commandsPerSec), fixed(r.redisCpuPct, 1), int(r.usecPerScriptCall),
        `${ms(r.probeP99Ms)} / ${ms(r.probeMaxMs)}`,
        fixed(r.heapDeltaMB, 1), fixed(r.rssDeltaMB, 1), int(r.lost),
        r === me ? "" : ratio(me?.evalshaPerSec, r.evalshaPerSec), r === me ? "" : ratio(me?.commandsPerSec, r.commandsPerSec),
        r === me ? "" : ratio(me?.redisCpuPct, r.redisCpuPct)]),
  );
}
