// What the holder intervals say. A hold is { instance, start, end } in ms: from the moment a
// request believed it held the lock until the moment it stopped believing it (it let go, or its
// lease told it the lock was lost, or its process was killed).

/**
 * Double holders seen: holds during which someone else took the lock too, i.e. holders that went
 * on believing they held a lock that another one held at the same time. A holder paused past its
 * TTL counts once, however many holders came and went while it slept.
 */
export function countDoubleHolders(holds) {
  const sorted = [...holds].sort((a, b) => a.start - b.start);
  let doubles = 0;
  for (let i = 0; i < sorted.length - 1; i++) {
    // Sorted by start: if the next hold began after this one ended, so did every later one.
    if (sorted[i + 1].start < sorted[i].end) doubles++;
  }
  return doubles;
}

/** The stretches of time in which two or more holds were believed at once: [{ start, end, holders }]. */
export function overlapSegments(holds) {
  const edges = holds.flatMap((h) => [{ at: h.start, step: 1 }, { at: h.end, step: -1 }])
    .sort((a, b) => a.at - b.at || a.step - b.step); // an end and a start at the same instant do not overlap
  const segments = [];
  let count = 0;
  let since = 0;
  let peak = 0;
  for (const edge of edges) {
    const before = count;
    count += edge.step;
    if (before < 2 && count >= 2) {
      since = edge.at;
      peak = count;
    } else if (before >= 2) {
      peak = Math.max(peak, count);
      if (count < 2 && edge.at > since) segments.push({ start: since, end: edge.at, holders: peak });
    }
  }
  return segments;
}
