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

/** A markdown table: the first column left-aligned, the others right-aligned. */
export function table(header, rows) {
  const lines = [`| ${header.join(" | ")} |`, `|${header.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const r of rows) lines.push(`| ${r.join(" | ")} |`);
  return lines.join("\n");
}

const failed = (row) => row?.error ?? row?.skipped;

const isFloor = (row) => row.id.startsWith("floor:");

export function w1Table(result) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  const floor = result.rows.find(isFloor);
  const part = (c, title) => {
    const rows = result.rows.map((r) => {
      const x = r[c];
      if (failed(x)) return [r.label, `error: ${failed(x)}`, "", "", "", "", "", "", "", ""];
      return [
        r.label, int(x.opsPerSec), ms(x.acquireP50Ms), ms(x.acquireP99Ms), ms(x.cycleP50Ms), int(x.clientCpuUsPerCycle), int(x.redisCpuUsPerCycle),
        fixed(x.redisCommandsPerCycle, 1), r === me ? "" : ratio(me?.[c]?.opsPerSec, x.opsPerSec), r === floor ? "" : ratio(x.opsPerSec, floor?.[c]?.opsPerSec),
      ];
    });
    return `${title}\n\n${table(
      ["library", "ops/s", "acquire p50 ms", "acquire p99 ms", "acquire+release p50 ms", "client CPU µs/op", "Redis CPU µs/op", "Redis commands/op", "surelock/this ops/s", "this/floor ops/s"],
      rows,
    )}`;
  };
  return `${part("c1", "**1 loop**")}\n\n${part("c50", "**50 concurrent loops**")}`;
}

export function contendedTable(result) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  const floor = result.rows.find(isFloor);
  const header = [
    "library", "sections/s", "holder changes/s", "handoff p50 ms", "handoff p99 ms", "longest wait ms", "Jain", "acquire errors", "lost updates",
    "surelock/this changes/s", "surelock/this handoff p50", "this/floor changes/s",
  ];
  const rows = result.rows.map((r) => {
    if (failed(r)) return [r.label, `error: ${failed(r)}`, ...Array(header.length - 2).fill("")];
    return [
      r.label,
      int(r.sectionsPerSec),
      int(r.holderChangesPerSec),
      ms(r.handoffP50Ms),
      ms(r.handoffP99Ms),
      ms(r.longestWaitMs),
      fixed(r.jain, 3),
      int(r.acquireErrors),
      r.lostUpdates === 0 ? "0" : `**${r.lostUpdates} LOST**`,
      r === me ? "" : ratio(me?.holderChangesPerSec, r.holderChangesPerSec),
      r === me ? "" : ratio(me?.handoffP50Ms, r.handoffP50Ms),
      r === floor ? "" : ratio(r.holderChangesPerSec, floor?.holderChangesPerSec),
    ];
  });
  return table(header, rows);
}

export function w4Table(result) {
  const find = (id, network) => result.rows.find((r) => r.id === id && r.network === network);
  return table(
    ["library", "network", "nodes", "ops/s", "acquire p50 ms", "acquire p99 ms", "acquire+release p50 ms", "acquire+release p99 ms", "surelock quorum/this p50", "this/floor p50 (same nodes)"],
    result.rows.map((r) => {
      const me = find("surelock:quorum", r.network);
      const floor = find(r.nodes === 1 ? "floor:single" : "floor:quorum", r.network);
      const network = r.network === "delayed" ? `+${result.linkDelayMs} ms each way` : "loopback";
      return failed(r)
        ? [r.label, network, String(r.nodes), `error: ${failed(r)}`, "", "", "", "", "", ""]
        : [r.label, network, String(r.nodes), int(r.opsPerSec), ms(r.acquireP50Ms), ms(r.acquireP99Ms), ms(r.cycleP50Ms), ms(r.cycleP99Ms),
          r === me ? "" : ratio(me?.cycleP50Ms, r.cycleP50Ms), r === floor ? "" : ratio(r.cycleP50Ms, floor?.cycleP50Ms)];
    }),
  );
}

export function w5Table(result) {
  const header = [
    "library", "leases held", "script calls/s", "all commands/s", "Redis CPU %", "µs per script call", "longest script call ms",
    "renewal bursts/s", "script calls per burst", "PING during bursts p99 / max ms", "PING outside bursts p99 / max ms", "client RSS per lease", "heap per lease", "lost",
    "surelock/this Redis CPU",
  ];
  const bytes = (x) => (n(x) ? `${int(x)} B` : "–");
  const parts = [];
  for (const leases of result.sizes ?? [...new Set(result.rows.map((r) => r.leases))]) {
    const rows = result.rows.filter((r) => r.leases === leases);
    const me = rows.find((r) => r.id === "surelock:default");
    parts.push(`**${int(leases)} leases**\n\n${table(header, rows.map((r) => failed(r)
      ? [r.label, `n/a: ${failed(r)}`, ...Array(header.length - 2).fill("")]
      : [r.label, int(r.held), r.scriptCallsPerSec >= 100 ? int(r.scriptCallsPerSec) : fixed(r.scriptCallsPerSec, 1), int(r.commandsPerSec),
        fixed(r.redisCpuPct, 1), int(r.usecPerScriptCall), r.slowScriptCalls ? ms(r.longestScriptCallMs) : `< ${fixed(result.slowUs / 1000, 1)}`,
        fixed(r.burstsPerSec, 2), fixed(r.scriptCallsPerBurst, 1), `${ms(r.pingDuringBurstsP99Ms)} / ${ms(r.pingDuringBurstsMaxMs)}`, `${ms(r.pingOutsideBurstsP99Ms)} / ${ms(r.pingOutsideBurstsMaxMs)}`,
        bytes(r.rssPerLeaseBytes), bytes(r.heapPerLeaseBytes), int(r.lost),
        r === me ? "" : ratio(me?.redisCpuPct, r.redisCpuPct)]))}`);
  }
  return parts.join("\n\n");
}

/** Seconds as "300 s", "2.0 h", "24.0 h". */
function lifetime(s) {
  if (!n(s)) return "–";
  return s < 3600 ? `${Math.round(s)} s` : `${(s / 3600).toFixed(1)} h`;
}

export function w6Table(result) {
  const me = result.rows.find((r) => r.id === "surelock:default");
  const header = [
    "library", "keys released", "cycles/s", "keys left", "used_memory Δ per released key", "MEMORY USAGE per released key",
    "PTTL of what is left (min … max)", "bytes per released key averaged over a day", "surelock/this",
  ];
  return table(header, result.rows.map((r) => failed(r)
    ? [r.label, `error: ${failed(r)}`, ...Array(header.length - 2).fill("")]
    : [r.label, int(r.released), int(r.cyclesPerSec), int(r.keysLeft), `${fixed(r.keptBytesPerKey, 1)} B`, `${fixed(r.memoryUsageBytesPerKey, 1)} B`,
      r.keysLeft ? `${lifetime(r.shortestPttlS)} … ${lifetime(r.longestPttlS)}${r.keysWithoutTtl ? `, **${int(r.keysWithoutTtl)} without TTL**` : ""}` : "nothing left",
      `${fixed(r.dayAverageBytesPerKey, r.dayAverageBytesPerKey < 10 ? 2 : 1)} B`,
      r === me ? "" : ratio(me?.dayAverageBytesPerKey, r.dayAverageBytesPerKey)]));
}

/** WQ: W2's figures per quorum size, each row against surelock and the floor on as many nodes, and what a section cost the busiest node. */
export function wqTable(result) {
  const header = [
    "library", "nodes", "sections/s", "holder changes/s", "handoff p50 ms", "longest wait ms", "Jain", "acquire errors", "lost updates",
    "commands/section (busiest node)", "script calls/section (busiest node)", "surelock/this changes/s", "this/floor changes/s",
    "this changes/s / floor sections/s",
  ];
  const rows = result.rows.map((r) => {
    if (failed(r)) return [r.label, String(r.nodes), `error: ${failed(r)}`, ...Array(header.length - 3).fill("")];
    const me = result.rows.find((x) => x.id === "surelock:default" && x.nodes === r.nodes);
    const floor = result.rows.find((x) => isFloor(x) && x.nodes === r.nodes);
    return [
      r.label, String(r.nodes), int(r.sectionsPerSec), int(r.holderChangesPerSec), ms(r.handoffP50Ms), ms(r.longestWaitMs), fixed(r.jain, 3),
      int(r.acquireErrors), r.lostUpdates === 0 ? "0" : `**${r.lostUpdates} LOST**`, fixed(r.commandsPerSection, 1), fixed(r.scriptCallsPerSection, 1),
      r === me ? "" : ratio(me?.holderChangesPerSec, r.holderChangesPerSec), r === floor ? "" : ratio(r.holderChangesPerSec, floor?.holderChangesPerSec),
      // The floor's holder changes are the gaps its own releaser's next SET happens to leave to a
      // spinner (5 % to 54 % of its sections in runs of one day): its sections/s, what a lock
      // without safety gets through on these nodes, is the steadier yardstick.
      r === floor ? "" : ratio(r.holderChangesPerSec, floor?.sectionsPerSec),
    ];
  });
  return table(header, rows);
}

/** WM: per line (multiLock waiters, mutex waiters), keep-alive while it waits, then its drain. */
export function wmTable(result) {
  if (result.rows.length === 0) return `n/a: ${result.note ?? "nothing ran"}`;
  const longest = (byScript, names) => {
    const found = names.map((name) => [name, byScript?.[name]]).filter(([, s]) => s && s.count > 0);
    return found.length ? found.map(([name, s]) => `${name} ${ms(s.maxUs / 1000)}`).join(", ") : `< ${ms(result.slowUs / 1000)}`;
  };
  const waitingHeader = [
    "line", "waiters", "keepalive calls over 0.1 ms: p50 / p99 ms", "longest keepalive call ms (its KEYS)", "keepalive calls/s", "quiet: commands per call", "quiet: Redis CPU µs per call", "µs per call", "Redis CPU %",
    "script calls per tick", "PING p50 / p99 / max ms", "PING during ticks p99 / max ms",
  ];
  const waiting = table(waitingHeader, result.rows.map((r) => failed(r)
    ? [r.label, `n/a: ${failed(r)}`, ...Array(waitingHeader.length - 2).fill("")]
    : [r.label, `${int(r.inLine)} of ${int(r.waiters)}`, r.slowKeepaliveCalls ? `${ms(r.keepaliveP50Ms)} / ${ms(r.keepaliveP99Ms)} (${int(r.slowKeepaliveCalls)} calls)` : "none",
      r.slowKeepaliveCalls ? `${ms(r.longestKeepaliveMs)} (${int(r.keepaliveKeysAtLongest)})` : `< ${ms(result.slowUs / 1000)}`,
      fixed(r.scriptCallsPerSec, 1), int(r.quietCommandsPerCall), int(r.quietCpuUsPerCall), int(r.usecPerScriptCall), fixed(r.redisCpuPct, 1), fixed(r.scriptCallsPerBurst, 1),
      `${ms(r.pingP50Ms)} / ${ms(r.pingP99Ms)} / ${ms(r.pingMaxMs)}`, `${ms(r.pingDuringBurstsP99Ms)} / ${ms(r.pingDuringBurstsMaxMs)}`]));
  const movingHeader = ["line", "queueing: longest call ms", "drain: served", "drain s", "script calls per holder", "publishes per holder", "commands per holder", "Redis CPU per holder ms", "drain: longest call ms", "leave: longest call ms"];
  const moving = table(movingHeader, result.rows.filter((r) => !failed(r)).map((r) => [
    r.label, longest(r.queueing, ["acquire-multi", "acquire", "keepalive"]), `${int(r.drained)} of ${int(r.waiters)}`, fixed(r.drainMs / 1000, 1),
    fixed(r.drainScriptCalls / Math.max(1, r.drained), 1), fixed(r.drainPublishes / Math.max(1, r.drained), 1),
    int(r.drainCommands / Math.max(1, r.drained)), ms((1000 * r.drainCpuSeconds) / Math.max(1, r.drained)),
    longest(r.draining, ["acquire-multi", "release-multi", "acquire", "release", "keepalive", "leave-multi", "leave-queue"]),
    longest(r.leaving, ["leave-multi", "leave-queue", "keepalive"]),
  ]));
  return `**While they wait**\n\n${waiting}\n\n**While the line moves**\n\n${moving}`;
}
