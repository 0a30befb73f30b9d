// Small statistics helpers. Every figure is computed from raw samples; nothing is sampled away.

/** The q-quantile (0..1) of `values` by the nearest-rank method; NaN when there is no sample. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** p50 and p99 at once (one sort). */
export function percentiles(values) {
  if (values.length === 0) return { p50: NaN, p99: NaN, max: NaN, n: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1], n: sorted.length };
}

/** Jain's fairness index: (Σx)² / (n·Σx²); 1 when all equal, 1/n when one gets everything. */
export function jain(counts) {
  if (counts.length === 0) return NaN;
  let sum = 0;
  let squares = 0;
  for (const x of counts) {
    sum += x;
    squares += x * x;
  }
  return squares === 0 ? NaN : (sum * sum) / (counts.length * squares);
}

/**
 * The figures of a contended run (W2, W3) from its critical sections.
 * sections: [{ w, waitStart, acquiredAt, releaseAt }], sorted by acquiredAt, covering the whole
 * run (warm-up and tail included: a section's predecessor may lie before the window).
 * openWaits: waitStart of each worker that never got the lock again (the tail was cut short).
 */
export function contendedFigures({ sections, windowStart, windowEnd, workers, openWaits, acquireErrors }) {
  const seconds = (windowEnd - windowStart) / 1000;
  const perWorker = new Map(workers.map((w) => [w, 0]));
  const handoffs = [];
  let count = 0;
  let changes = 0;
  let overlaps = 0;
  let longestWait = 0;
  for (let i = 0; i < sections.length; i++) {
    const s = sections[i];
    const prev = sections[i - 1];
    // A correct lock never lets a section start before the previous one called release.
    if (prev && s.acquiredAt < prev.releaseAt) overlaps++;
    if (s.acquiredAt > windowEnd) {
      // Taken after the window closed: its wait was running at the end, count that much of it.
      if (s.waitStart < windowEnd) longestWait = Math.max(longestWait, windowEnd - s.waitStart);
      continue;
    }
    if (s.acquiredAt < windowStart) continue;
    count++;
    perWorker.set(s.w, (perWorker.get(s.w) ?? 0) + 1);
    longestWait = Math.max(longestWait, s.acquiredAt - s.waitStart);
    if (prev && prev.w !== s.w) {
      changes++;
      handoffs.push(s.acquiredAt - prev.releaseAt);
    }
  }
  // A worker still waiting when the window closed has waited at least this long.
  for (const start of openWaits) longestWait = Math.max(longestWait, windowEnd - start);
  const handoff = percentiles(handoffs);
  return {
    sections: count,
    sectionsPerSec: count / seconds,
    holderChanges: changes,
    holderChangesPerSec: changes / seconds,
    handoffP50Ms: handoff.p50,
    handoffP99Ms: handoff.p99,
    handoffMeanMs: handoffs.length ? handoffs.reduce((a, b) => a + b, 0) / handoffs.length : NaN,
    longestWaitMs: longestWait,
    jain: jain([...perWorker.values()]),
    minWorkerSections: Math.min(...perWorker.values()),
    maxWorkerSections: Math.max(...perWorker.values()),
    overlaps,
    acquireErrors,
    perWorker: Object.fromEntries(perWorker),
    windowMs: windowEnd - windowStart,
  };
}
