// What the holders' beliefs say. A belief is { start, end } in ms: from the moment a request's
// acquire returned until the last moment it saw itself holding the lock (it let go, its lease
// said no when it looked, or its process was killed). Only holders' own looks move `end`, so a
// holder paused past its lease believes nothing while it sleeps; what it does on waking counts
// only if its lease still says "held" then.

/**
 * Double holders: holders that went on believing they held the lock after another holder's
 * acquire had succeeded, i.e. after the lock had been given to someone else (it expired under
 * them, or a stray DEL freed it). The later holder got the lock from Redis and is not counted;
 * a holder that slept through several others counts once. An end and a start at the same
 * instant do not overlap.
 */
export function countDoubleHolders(beliefs) {
  const sorted = [...beliefs].sort((a, b) => a.start - b.start);
  let doubles = 0;
  for (let i = 0; i < sorted.length - 1; i++) {
    // Sorted by start: if the next belief began after this one ended, so did every later one.
    if (sorted[i + 1].start < sorted[i].end) doubles++;
  }
  return doubles;
}

/** The stretches of time in which two or more beliefs overlapped: [{ start, end, holders }]. */
export function overlapSegments(beliefs) {
  const edges = beliefs.flatMap((h) => [{ at: h.start, step: 1 }, { at: h.end, step: -1 }])
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
