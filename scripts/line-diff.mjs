// A unified diff of two texts, line by line, for reports a person reads (the API report check).
// A longest-common-subsequence table after trimming the common head and tail: the texts are a few
// hundred lines, so the quadratic table is small and the code stays obvious.

/**
 * @param {string} before
 * @param {string} after
 * @param {{ from?: string, to?: string, context?: number }} [options]
 * @returns {string} "" when the texts are equal
 */
export function unifiedDiff(before, after, { from = "before", to = "after", context = 3 } = {}) {
  if (before === after) return "";
  const a = before.split("\n");
  const b = after.split("\n");
  const ops = diffLines(a, b);
  const out = [`--- ${from}`, `+++ ${to}`];
  for (const hunk of hunks(ops, context)) {
    const first = hunk[0];
    const oldCount = hunk.filter((op) => op.kind !== "+").length;
    const newCount = hunk.filter((op) => op.kind !== "-").length;
    out.push(`@@ -${first.oldLine + 1},${oldCount} +${first.newLine + 1},${newCount} @@`);
    for (const op of hunk) out.push(`${op.kind}${op.text}`);
  }
  return out.join("\n");
}

/** Every line of both texts as kept (" "), removed ("-") or added ("+"), with its line numbers (0-based). */
function diffLines(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
  const lcs = Array.from({ length: x.length + 1 }, () => new Int32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const ops = [];
  for (let i = 0; i < head; i++) ops.push({ kind: " ", text: a[i], oldLine: i, newLine: i });
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      ops.push({ kind: " ", text: x[i], oldLine: head + i++, newLine: head + j++ });
    } else if (i < x.length && (j === y.length || lcs[i + 1][j] >= lcs[i][j + 1])) {
      // Removals before additions, as diff and git print them.
      ops.push({ kind: "-", text: x[i], oldLine: head + i++, newLine: head + j });
    } else {
      ops.push({ kind: "+", text: y[j], oldLine: head + i, newLine: head + j++ });
    }
  }
  for (let k = 0; k < tail; k++) {
    ops.push({ kind: " ", text: a[a.length - tail + k], oldLine: a.length - tail + k, newLine: b.length - tail + k });
  }
  return ops;
}

/** Groups the changes with `context` kept lines around each; changes closer than 2 × context share a hunk. */
function hunks(ops, context) {
  const changed = ops.flatMap((op, index) => (op.kind === " " ? [] : [index]));
  const groups = [];
  for (const index of changed) {
    const last = groups.at(-1);
    if (last && index - last.end <= 2 * context) last.end = index;
    else groups.push({ start: index, end: index });
  }
  return groups.map((g) => ops.slice(Math.max(0, g.start - context), Math.min(ops.length, g.end + context + 1)));
}
