// The demo's text: the table (plain in a pipe, coloured in a terminal), one line per strategy on
// what its fault did, and the legend. Every figure and every clause comes from what was measured.

const COLUMNS = [
  { title: "strategy", left: true, value: (s) => s.strategy },
  { title: "accepted", value: (s) => s.accepted },
  { title: "oversold", value: (s) => s.oversold, bad: (s) => s.oversold > 0 },
  { title: "stale writes", value: (s) => s.staleWrites, bad: (s) => s.staleWrites > 0 },
  { title: "sales undone", value: (s) => s.salesUndone, bad: (s) => s.salesUndone > 0 },
  { title: "stale writes refused", value: (s) => s.staleWritesRefused },
  { title: "double holders", value: (s) => s.doubleHolders ?? "-", warn: (s) => (s.doubleHolders ?? 0) > 0 },
  { title: "locks w/o TTL", value: (s) => s.locksWithoutTtl, bad: (s) => s.locksWithoutTtl > 0 },
  { title: "p50 ms", value: (s) => s.latencyMs.p50 ?? "-" },
  { title: "p99 ms", value: (s) => s.latencyMs.p99 ?? "-" },
];

const POINTS = {
  "before-write": "before its write",
  "before-read": "before its read",
  "before-release": "before its DEL",
  "between-get-and-del": "between GET and DEL",
  "between-setnx-and-expire": "between SETNX and EXPIRE",
};
const point = (s) => s.fault.where ?? POINTS[s.fault.at] ?? s.fault.at;
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The fault as it happened, from the events the run recorded. */
export function describeFault(s) {
  if (!s.fault) return "no fault";
  if (!s.fault.injected) return `${s.fault.kind} never reached (the burst ended first)`;
  const kill = s.events.find((e) => e.kind === "kill");
  if (kill) return `SIGKILL #${kill.instance} ${point(s)}`;
  const pause = s.events.find((e) => e.kind === "pause");
  const resume = s.events.find((e) => e.kind === "resume");
  const ms = pause && resume ? ` for ${Math.round(resume.at - pause.at)} ms` : "";
  return `SIGSTOP #${pause?.instance ?? s.fault.instance}${ms} ${point(s)}`;
}

/** What the fault did, in one or two sentences: the victim's late step and its damage. */
export function describeOutcome(s) {
  const gaveUp = s.events.some((e) => (e.kind === "resume" || e.kind === "held") && e.why === "deadline");
  const story = tellOutcome(s);
  return gaveUp ? `${story} (The orchestrator gave up waiting for the next holder: not the planned order.)` : story;
}

function tellOutcome(s) {
  const f = s.fault;
  const undone = `${plural(s.staleWrites, "stale write")} undid ${plural(s.salesUndone, "sale")}`;
  const tail = s.staleWrites > 0 ? `${undone}.` : "nothing undone.";
  if (!f?.injected) return s.staleWrites > 0 ? `${tail[0].toUpperCase()}${tail.slice(1)}` : "Nothing undone.";
  if (f.kind === "kill") {
    const kill = s.events.find((e) => e.kind === "kill");
    const soldAfter = s.holds.filter((h) => h.outcome === "sold" && kill && h.start > kill.at).length;
    const waited = `${plural(s.statuses["503"] ?? 0, "buyer")} timed out waiting for the lock`;
    if (s.locksWithoutTtl === 0) return `Its lock expired without it; ${tail}`;
    return soldAfter === 0
      ? `Its lock never expires: nobody sold after it died, ${waited}.`
      : `Its lock never expires: ${plural(soldAfter, "sale")} after it died, then ${waited}.`;
  }
  const v = f.victim;
  const held = f.held;
  const heldBy = held ? ` while #${held.instance} held the lock` : "";
  if (f.at === "before-write") {
    if (f.next === null) return `Woken, its write landed among everyone else's: ${tail[0].toUpperCase()}${tail.slice(1)}`;
    if (v?.outcome === "stale-refused") return `Woken, its write was refused${heldBy}: ${tail}`;
    const lease = v?.heldAtWrite === false
      ? "Its lease ran out during the pause (lease.held false at its write), but the write it had decided on"
      : "Woken, its write";
    if (!v?.staleWrite) return `${lease} landed${heldBy}; ${tail}`;
    const own = `1 stale SET undid ${plural(v.undid, "sale")}`;
    return `${lease} landed${heldBy}: ${s.staleWrites === 1 && s.salesUndone === v.undid ? `${own}.` : `${own}; in all, ${tail}`}`;
  }
  // A late release: its DEL lands on the lock another holder has taken since.
  const freed = held ? `its DEL freed the lock #${held.instance} held, and another holder took it` : "it woke up and let go";
  return `Woken after its lock expired, ${freed}: ${tail}`;
}

/** The legend under the table. */
export function legend(result) {
  const o = result.options;
  const lines = [
    `accepted: orders in the order log. oversold: orders beyond the ${o.stock} units.`,
    "stale writes: writes of the stock counter that landed on a value other than the one their writer had read (each write is",
    "  SET ... GET, which answers the value it replaced). sales undone: orders the counter does not account for: stale writes",
    "  put their units back, to be sold again (oversold: sales undone minus the units left on the counter, if positive).",
    "stale writes refused: writes that did not land because the writer no longer held the lock: refused by the fencing guard,",
    "  or skipped by the holder's own lease check (lease.held) just before its write.",
    "double holders: holders that went on believing they held the lock (not yet let go, and lease.held true whenever they",
    "  looked) after another holder's acquire had succeeded; - where there is no lock. locks w/o TTL: lock keys left without expiry.",
  ];
  if (o.faults) {
    lines.push("Faults are real signals to real processes. So that each lands at the same protocol point in every run, the victim",
      "waits at its fault point for the orchestrator's go (in this demo's fault mode only), and where its late step must meet",
      "the next holder, that holder waits at its read or its write until the step has landed.");
  }
  return lines.join("\n");
}

const paint = (on, code) => (text) => (on ? `\x1b[${code}m${text}\x1b[0m` : text);

/** @param {{ strategies: object[] }} result  @param {{ color?: boolean }} [options] */
export function renderTable(result, { color = false } = {}) {
  const red = paint(color, "31");
  const green = paint(color, "32");
  const bold = paint(color, "1");
  const yellow = paint(color, "33");
  const rows = result.strategies.map((s) => COLUMNS.map((c) => String(c.value(s))));
  const widths = COLUMNS.map((c, i) => Math.max(c.title.length, ...rows.map((r) => r[i].length)));
  const pad = (text, i) => (COLUMNS[i].left ? text.padEnd(widths[i]) : text.padStart(widths[i]));
  const lines = [COLUMNS.map((c, i) => bold(pad(c.title, i))).join("  ").trimEnd()];
  result.strategies.forEach((s, r) => {
    lines.push(COLUMNS.map((c, i) => {
      const text = pad(rows[r][i], i);
      if (i === 0) return bold(text);
      if (c.bad) return c.bad(s) ? red(text) : green(text);
      if (c.warn) return c.warn(s) ? yellow(text) : green(text);
      return text;
    }).join("  ").trimEnd());
  });
  return lines.join("\n");
}

/** Words of `text` in lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text, width) {
  const lines = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

/** A paragraph per strategy: the fault, then what it did; wrapped to `columns`, name hanging. */
export function renderStory(result, { color = false, columns = 120 } = {}) {
  const bold = paint(color, "1");
  const width = Math.max(...result.strategies.map((s) => s.strategy.length));
  const indent = " ".repeat(width + 2);
  return result.strategies.map((s) => {
    const [first, ...rest] = wrap(`${describeFault(s)}. ${describeOutcome(s)}`, Math.max(40, columns - width - 2));
    return [`${bold(s.strategy.padEnd(width))}  ${first}`, ...rest.map((line) => `${indent}${line}`)].join("\n");
  }).join("\n");
}
