// The demo's table: plain text in a pipe, with colour in a terminal.

const COLUMNS = [
  { title: "strategy", left: true, value: (s) => s.strategy },
  { title: "accepted", value: (s) => s.accepted },
  { title: "oversold", value: (s) => s.oversold, bad: (s) => s.oversold > 0 },
  { title: "locks w/o TTL", value: (s) => s.locksWithoutTtl, bad: (s) => s.locksWithoutTtl > 0 },
  { title: "double holders", value: (s) => s.doubleHolders, warn: (s) => s.doubleHolders > 0 },
  { title: "stale writes refused", value: (s) => s.staleWritesRefused },
  { title: "p50 ms", value: (s) => s.latencyMs.p50 ?? "-" },
  { title: "p99 ms", value: (s) => s.latencyMs.p99 ?? "-" },
  { title: "fault injected", left: true, value: (s) => describeFault(s) },
];

const POINTS = {
  "before-write": "before its write",
  "before-release": "before its DEL",
  "between-get-and-del": "between GET and DEL",
  "between-setnx-and-expire": "between SETNX and EXPIRE",
};

/** The fault as it happened, from the events the run recorded. */
export function describeFault(s) {
  if (!s.fault) return "none";
  if (!s.fault.injected) return `${s.fault.kind} never reached (burst ended first)`;
  const point = POINTS[s.fault.at] ?? s.fault.at;
  const kill = s.events.find((e) => e.kind === "kill");
  if (kill) return `SIGKILL #${kill.instance} ${point}`;
  const pause = s.events.find((e) => e.kind === "pause");
  const resume = s.events.find((e) => e.kind === "resume");
  const ms = pause && resume ? ` for ${Math.round(resume.at - pause.at)} ms` : "";
  return `SIGSTOP #${pause?.instance ?? s.fault.instance} ${point}${ms}`;
}

const paint = (on, code) => (text) => (on ? `\x1b[${code}m${text}\x1b[0m` : text);

/** @param {{ strategies: object[] }} result  @param {{ color?: boolean }} [options] */
export function renderTable(result, { color = false } = {}) {
  const red = paint(color, "31");
  const green = paint(color, "32");
  const bold = paint(color, "1");
  const dim = paint(color, "2");
  const yellow = paint(color, "33");
  const rows = result.strategies.map((s) => COLUMNS.map((c) => String(c.value(s))));
  const widths = COLUMNS.map((c, i) => Math.max(c.title.length, ...rows.map((r) => r[i].length)));
  const pad = (text, i) => (i === COLUMNS.length - 1 ? text : COLUMNS[i].left ? text.padEnd(widths[i]) : text.padStart(widths[i]));
  const lines = [COLUMNS.map((c, i) => bold(pad(c.title, i))).join("  ").trimEnd()];
  result.strategies.forEach((s, r) => {
    lines.push(COLUMNS.map((c, i) => {
      const text = pad(rows[r][i], i);
      if (i === 0) return bold(text);
      if (c.bad) return c.bad(s) ? red(text) : green(text);
      if (c.warn) return c.warn(s) ? yellow(text) : green(text);
      if (i === COLUMNS.length - 1) return dim(text);
      return text;
    }).join("  ").trimEnd());
  });
  return lines.join("\n");
}
