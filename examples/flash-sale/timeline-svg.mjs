// The demo's timeline as an SVG: one band per strategy, one lane per instance, a bar for every
// stretch of time in which a request believed it held the lock, and an outline where its section
// went on after its lease had said "not held". Red where two or more believed it at once; hatched
// where an instance was paused; marks for kills, stale writes that landed, stale writes refused,
// leases that told their holder they were lost, and the holder the orchestrator held at its read
// or write. Written by hand: a handful of rects, paths and texts.

import { overlapSegments } from "./analysis.mjs";
import { describeFault } from "./report.mjs";

const WIDTH = 1100;
const LABEL = 120;
const RIGHT = 24;
const PLOT = WIDTH - LABEL - RIGHT;
const LANE = 22;
const BAR = 14;

const COLORS = {
  hold: "#2563eb",
  stale: "#b91c1c",
  held: "#0f766e",
  overlap: "#dc2626",
  pause: "#6b7280",
  kill: "#111827",
  refused: "#ea580c",
  lost: "#7c3aed",
  text: "#111827",
  muted: "#6b7280",
  grid: "#e5e7eb",
};

const esc = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const n = (value) => (Math.round(value * 10) / 10).toString();

/** A tiny element writer: el("rect", { x: 1 }) or el("text", { x: 1 }, "label"). */
function el(name, attrs, content) {
  const list = Object.entries(attrs).filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${esc(typeof v === "number" ? n(v) : v)}"`).join("");
  return content === undefined ? `<${name}${list}/>` : `<${name}${list}>${content}</${name}>`;
}

/** A round step for about `parts` ticks over `span` ms: 1, 2 or 5 times a power of ten. */
function tickStep(span, parts = 8) {
  const raw = span / parts;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? raw;
}

/** The union of [start, end] stretches, merged. */
function union(stretches) {
  const sorted = [...stretches].sort((a, b) => a.start - b.start);
  const merged = [];
  for (const s of sorted) {
    const last = merged.at(-1);
    if (last && s.start <= last.end) last.end = Math.max(last.end, s.end);
    else merged.push({ ...s });
  }
  return merged;
}

function band(s, top) {
  const parts = [];
  const t0 = s.window.start;
  const span = Math.max(1, s.window.end - t0);
  const x = (t) => LABEL + (Math.min(Math.max(t, t0), s.window.end) - t0) * (PLOT / span);
  const lanesTop = top + 34;
  const laneY = (i) => lanesTop + i * LANE;
  const lanesBottom = laneY(s.instances);

  const verdict = [
    `accepted ${s.accepted} of ${s.stock}`,
    `oversold ${s.oversold}`,
    `stale writes ${s.staleWrites} (sales undone ${s.salesUndone})`,
    `stale writes refused ${s.staleWritesRefused}`,
    `double holders ${s.doubleHolders ?? "- (no lock)"}`,
    `locks without TTL ${s.locksWithoutTtl}`,
  ].join(" · ");
  parts.push(el("text", { x: 8, y: top + 14, "font-weight": "bold", "font-size": 14, fill: COLORS.text }, esc(s.strategy)));
  parts.push(el("text", { x: 8 + s.strategy.length * 8.6 + 12, y: top + 14, "font-size": 12, fill: COLORS.muted }, esc(`${s.summary} — fault: ${describeFault(s)}`)));
  const bad = s.oversold > 0 || s.locksWithoutTtl > 0 || s.salesUndone > 0;
  parts.push(el("text", { x: 8, y: top + 29, "font-size": 12, fill: bad ? COLORS.overlap : "#15803d" }, esc(verdict)));

  // Time grid and axis.
  const step = tickStep(span);
  for (let t = 0; t <= span; t += step) {
    parts.push(el("line", { x1: x(t0 + t), x2: x(t0 + t), y1: lanesTop - 2, y2: lanesBottom, stroke: COLORS.grid }));
    parts.push(el("text", { x: x(t0 + t), y: lanesBottom + 12, "font-size": 10, fill: COLORS.muted, "text-anchor": "middle" }, `${Math.round(t)}${t === 0 ? " ms" : ""}`));
  }

  // The pause goes under the bars, the marks over them.
  const pause = s.events.find((e) => e.kind === "pause");
  const resume = s.events.find((e) => e.kind === "resume");
  if (pause) {
    const y = laneY(pause.instance) + 1;
    const end = resume?.at ?? s.window.end;
    parts.push(el("rect", { x: x(pause.at), y, width: Math.max(2, x(end) - x(pause.at)), height: LANE - 2, fill: "url(#paused)", stroke: COLORS.pause, "stroke-width": 0.8 }));
  }

  const beliefs = s.holds.map((h) => ({ instance: h.instance, start: h.start, end: h.believedUntil }));
  const overlaps = overlapSegments(beliefs);
  for (let i = 0; i < s.instances; i++) {
    const y = laneY(i) + (LANE - BAR) / 2;
    parts.push(el("text", { x: LABEL - 8, y: y + BAR - 3, "font-size": 11, fill: COLORS.text, "text-anchor": "end" }, `instance ${i}`));
    for (const h of s.holds.filter((h) => h.instance === i && h.end > h.believedUntil + 0.5)) {
      // The section went on after the holder's lease had said "not held".
      parts.push(el("rect", { x: x(h.believedUntil), y: y + 2, width: Math.max(1, x(h.end) - x(h.believedUntil)), height: BAR - 4, fill: "none", stroke: COLORS.hold, "stroke-width": 1, "stroke-dasharray": "3 2" }));
    }
    const mine = beliefs.filter((h) => h.instance === i);
    for (const h of mine) {
      parts.push(el("rect", { x: x(h.start), y, width: Math.max(1, x(h.end) - x(h.start)), height: BAR, fill: COLORS.hold, "fill-opacity": 0.45 }));
    }
    // Red: this lane's holds, where they overlapped any other hold.
    const red = union(mine.flatMap((h) => overlaps
      .filter((o) => o.start < h.end && o.end > h.start)
      .map((o) => ({ start: Math.max(o.start, h.start), end: Math.min(o.end, h.end) }))));
    for (const r of red) {
      parts.push(el("rect", { x: x(r.start), y, width: Math.max(1.5, x(r.end) - x(r.start)), height: BAR, fill: COLORS.overlap, "fill-opacity": 0.8 }));
    }
  }

  // Faults and what the holders were told.
  if (pause) {
    const y = laneY(pause.instance) + 1;
    const end = resume?.at ?? s.window.end;
    parts.push(el("text", { x: (x(pause.at) + x(end)) / 2, y: y + LANE / 2 + 3, "font-size": 10, fill: COLORS.text, "text-anchor": "middle", "font-weight": "bold", stroke: "#fff", "stroke-width": 3, "paint-order": "stroke" }, `SIGSTOP ${Math.round(end - pause.at)} ms`));
  }
  for (const e of s.events) {
    const cx = x(e.at);
    const cy = laneY(e.instance) + LANE / 2;
    if (e.kind === "kill") {
      parts.push(el("path", { d: `M${n(cx - 5)} ${n(cy - 5)} l10 10 m0 -10 l-10 10`, stroke: COLORS.kill, "stroke-width": 2.5 }));
      parts.push(el("text", { x: cx + 8, y: cy - 5, "font-size": 10, fill: COLORS.kill, "font-weight": "bold", stroke: "#fff", "stroke-width": 3, "paint-order": "stroke" }, "SIGKILL"));
    } else if (e.kind === "refused") {
      parts.push(el("path", { d: `M${n(cx)} ${n(cy - 7)} l6 7 l-6 7 l-6 -7 z`, fill: COLORS.refused, stroke: "#fff", "stroke-width": 1 }));
    } else if (e.kind === "lost") {
      parts.push(el("line", { x1: cx, x2: cx, y1: cy - 9, y2: cy + 9, stroke: COLORS.lost, "stroke-width": 2 }));
    } else if (e.kind === "stale-write") {
      parts.push(el("circle", { cx, cy, r: 5, fill: COLORS.stale, stroke: "#fff", "stroke-width": 1 }));
      if (e.undid > 1 && s.staleWrites <= 3) { // labels only where they stay legible
        parts.push(el("text", { x: cx + 7, y: cy - 6, "font-size": 10, fill: COLORS.stale, "font-weight": "bold", stroke: "#fff", "stroke-width": 3, "paint-order": "stroke" }, `undid ${e.undid}`));
      }
    } else if (e.kind === "held") {
      const x0 = x(e.at);
      const x1 = Math.max(x0 + 3, x(e.until));
      parts.push(el("path", { d: `M${n(x0)} ${n(cy - 9)} v-3 H${n(x1)} v3`, fill: "none", stroke: COLORS.held, "stroke-width": 2 }));
      parts.push(el("text", { x: x1 + 4, y: cy - 9, "font-size": 10, fill: COLORS.held, stroke: "#fff", "stroke-width": 3, "paint-order": "stroke" }, `held at ${e.point.replace("before-", "its ")}`));
    }
  }
  if (s.locksWithoutTtl > 0) {
    const kill = s.events.find((e) => e.kind === "kill");
    if (kill) {
      // The dead process's lock lives on: nobody holds it, and it never expires.
      const y = laneY(kill.instance) + LANE / 2;
      parts.push(el("line", { x1: x(kill.at), x2: x(s.window.end), y1: y, y2: y, stroke: COLORS.overlap, "stroke-width": 2, "stroke-dasharray": "6 4" }));
    }
    const from = kill ? x(kill.at) + 56 : LABEL;
    const y = lanesTop + (lanesBottom - lanesTop) / 2;
    parts.push(el("text", { x: Math.max(from, LABEL + PLOT / 3), y: y + 4, "font-size": 12, fill: COLORS.overlap, "font-weight": "bold" },
      esc(`lock left without TTL: nobody holds it, nobody gets it (${s.statuses["503"] ?? 0} buyers timed out)`)));
  }
  return { svg: parts.join("\n"), height: lanesBottom + 16 - top };
}

function legend(top) {
  const items = [
    ["rect", COLORS.hold, "believed it held the lock"],
    ["after", COLORS.hold, "went on, lease said not held"],
    ["rect", COLORS.overlap, "two or more believed it at once"],
    ["pause", COLORS.pause, "paused (SIGSTOP … SIGCONT)"],
    ["kill", COLORS.kill, "killed (SIGKILL)"],
    ["stale", COLORS.stale, "stale write landed"],
    ["refused", COLORS.refused, "stale write refused"],
    ["lost", COLORS.lost, "lease reported lost"],
    ["held", COLORS.held, "held by the demo"],
  ];
  let cx = 8;
  let y = top;
  const svg = items.map(([kind, color, label]) => {
    const width = 22 + label.length * 6.2 + 18;
    if (cx + width > WIDTH - RIGHT) {
      cx = 8;
      y += 18;
    }
    let mark;
    if (kind === "rect") mark = el("rect", { x: cx, y: y - 9, width: 16, height: 10, fill: color, "fill-opacity": kind === "rect" && color === COLORS.hold ? 0.45 : 0.8 });
    else if (kind === "pause") mark = el("rect", { x: cx, y: y - 9, width: 16, height: 10, fill: "url(#paused)", stroke: color, "stroke-width": 0.8 });
    else if (kind === "kill") mark = el("path", { d: `M${cx + 3} ${y - 9} l10 10 m0 -10 l-10 10`, stroke: color, "stroke-width": 2.5 });
    else if (kind === "refused") mark = el("path", { d: `M${cx + 8} ${y - 11} l6 7 l-6 7 l-6 -7 z`, fill: color });
    else if (kind === "after") mark = el("rect", { x: cx, y: y - 8, width: 16, height: 8, fill: "none", stroke: color, "stroke-width": 1, "stroke-dasharray": "3 2" });
    else if (kind === "stale") mark = el("circle", { cx: cx + 8, cy: y - 4, r: 5, fill: color });
    else if (kind === "held") mark = el("path", { d: `M${cx} ${y - 2} v-6 h16 v6`, fill: "none", stroke: color, "stroke-width": 2 });
    else mark = el("line", { x1: cx + 8, x2: cx + 8, y1: y - 11, y2: y + 3, stroke: color, "stroke-width": 2 });
    const text = el("text", { x: cx + 22, y, "font-size": 11, fill: COLORS.text }, esc(label));
    cx += width;
    return `${mark}\n${text}`;
  }).join("\n");
  return { svg, bottom: y };
}

/** The whole picture for a runFlashSale() result. */
export function renderTimeline(result) {
  const o = result.options;
  const header = [
    el("text", { x: 8, y: 22, "font-size": 17, "font-weight": "bold", fill: COLORS.text }, "surelock demo: who believed it held the lock, and when"),
    el("text", { x: 8, y: 40, "font-size": 12, fill: COLORS.muted },
      esc(`flash sale of ${o.stock} units to ${o.buyers} buyers, ${o.instances} shop instances behind a round-robin balancer, lock TTL ${o.ttlMs} ms, seed ${o.seed}; time from the start of each burst`)),
  ];
  const key = legend(62);
  header.push(key.svg);
  const bands = [];
  let top = key.bottom + 18;
  for (const s of result.strategies) {
    const b = band(s, top);
    bands.push(b.svg);
    top += b.height + 14;
  }
  const height = top;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${n(height)}" viewBox="0 0 ${WIDTH} ${n(height)}" font-family="ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif">`,
    "<defs>",
    `<pattern id="paused" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/><line x1="0" y1="0" x2="0" y2="6" stroke="${COLORS.pause}" stroke-width="2"/></pattern>`,
    "</defs>",
    el("rect", { x: 0, y: 0, width: WIDTH, height, fill: "#ffffff" }),
    ...header,
    ...bands,
    "</svg>",
    "",
  ].join("\n");
}
