// A small SVG writer for horizontal bar charts: panels of labelled bars, each with its value
// written at its end. An optional second value per bar (a p99 behind a p50) is drawn as a paler
// bar behind the first. Each panel has its own linear scale starting at zero.

const WIDTH = 860;
const LABEL_W = 250;
const VALUE_W = 170;
const ROW_H = 24;
const BAR_H = 15;
const COLORS = { surelock: "#d9480f", peer: "#3b5bdb", floor: "#868e96" };

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const ok = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * chart: { title, subtitle?, footnote?, panels: [{ title, bars: [{ label, value, value2?, text, kind }] }] }
 * kind: "surelock" | "peer" | "floor"; text: the value as written next to the bar.
 */
export function barChart({ title, subtitle, footnote, panels }) {
  const out = [];
  let y = 30;
  out.push(`<text x="16" y="${y}" class="title">${esc(title)}</text>`);
  if (subtitle) {
    y += 20;
    out.push(`<text x="16" y="${y}" class="sub">${esc(subtitle)}</text>`);
  }
  y += 14;
  const barW = WIDTH - LABEL_W - VALUE_W - 16;
  for (const panel of panels) {
    y += 24;
    out.push(`<text x="16" y="${y}" class="panel">${esc(panel.title)}</text>`);
    y += 8;
    const max = Math.max(0, ...panel.bars.flatMap((b) => [b.value, b.value2].filter(ok)));
    const scale = (v) => (max > 0 ? Math.max(1, (v / max) * barW) : 1);
    const top = y;
    for (const bar of panel.bars) {
      const color = COLORS[bar.kind] ?? COLORS.peer;
      const cy = y + ROW_H / 2;
      out.push(`<text x="${LABEL_W - 8}" y="${cy + 4}" class="label${bar.kind === "surelock" ? " me" : ""}" text-anchor="end">${esc(bar.label)}</text>`);
      let end = LABEL_W;
      if (ok(bar.value2)) {
        const w = scale(bar.value2);
        out.push(`<rect x="${LABEL_W}" y="${cy - BAR_H / 2}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${color}" fill-opacity="0.3"/>`);
        end = Math.max(end, LABEL_W + w);
      }
      if (ok(bar.value)) {
        const w = scale(bar.value);
        out.push(`<rect x="${LABEL_W}" y="${cy - BAR_H / 2}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${color}"/>`);
        end = Math.max(end, LABEL_W + w);
      }
      out.push(`<text x="${(end + 6).toFixed(1)}" y="${cy + 4}" class="value">${esc(bar.text)}</text>`);
      y += ROW_H;
    }
    out.push(`<line x1="${LABEL_W}" y1="${top}" x2="${LABEL_W}" y2="${y}" stroke="#495057" stroke-width="1"/>`);
  }
  if (footnote) {
    y += 26;
    out.push(`<text x="16" y="${y}" class="sub">${esc(footnote)}</text>`);
  }
  const height = y + 16;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${esc(title)}">`,
    "<style>text{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;fill:#212529}" +
      ".title{font-size:17px;font-weight:600}.sub{font-size:12px;fill:#495057}.panel{font-size:13px;font-weight:600}" +
      ".label{font-size:12px}.me{font-weight:700}.value{font-size:12px;fill:#343a40}</style>",
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...out,
    "</svg>",
    "",
  ].join("\n");
}
