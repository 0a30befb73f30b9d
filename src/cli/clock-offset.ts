/**
 * Clock offsets for `surelock doctor`, as pure functions: how far a server's clock (TIME) is from
 * this host's, bounded by the round trip (NTP's reasoning: the server read its clock somewhere
 * between our send and our receive), and how far the nodes of a quorum are from each other.
 */

/** One TIME round trip: local wall-clock instants (ms, sub-ms resolution) around the server's reading. */
export interface TimeSample {
  /** When the command was sent, local wall clock, ms since the epoch. */
  readonly sentAtMs: number;
  /** When the reply arrived, local wall clock, ms since the epoch. */
  readonly receivedAtMs: number;
  /** The server's clock as TIME answered it, µs since the epoch. */
  readonly serverUs: number;
}

/** A clock's offset from this host's: `offsetMs` ± `boundMs`. */
export interface ClockOffset {
  /** Server minus local, ms: positive when the server's clock is ahead. */
  readonly offsetMs: number;
  /** The true offset is within `offsetMs` ± this (half the round trip of the sample used). */
  readonly boundMs: number;
  /** The round trip of the sample used, ms. */
  readonly rttMs: number;
}

/** TIME's reply, `[seconds, microseconds]` as strings (or integers), as µs; undefined if it is not one. */
export function parseTime(reply: unknown): number | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const [seconds, micros] = reply.map((part) => (typeof part === "string" && /^\d+$/.test(part) ? Number(part) : part));
  if (typeof seconds !== "number" || typeof micros !== "number" || !Number.isInteger(seconds) || !Number.isInteger(micros)) return undefined;
  return seconds * 1_000_000 + micros;
}

/**
 * The offset from the sample with the shortest round trip (the tightest bound): the server read
 * its clock between send and receive, so the offset is within half the round trip of the one
 * measured against the midpoint.
 */
export function clockOffset(samples: readonly TimeSample[]): ClockOffset {
  if (samples.length === 0) throw new Error("clockOffset needs at least one sample");
  let best = samples[0] as TimeSample;
  for (const s of samples) if (s.receivedAtMs - s.sentAtMs < best.receivedAtMs - best.sentAtMs) best = s;
  const rttMs = Math.max(0, best.receivedAtMs - best.sentAtMs);
  const midpointMs = (best.sentAtMs + best.receivedAtMs) / 2;
  return { offsetMs: best.serverUs / 1000 - midpointMs, boundMs: rttMs / 2, rttMs };
}

/** The widest disagreement among several clocks, each measured against this host's. */
export interface ClockSpread {
  /** The largest offset minus the smallest, ms. */
  readonly spreadMs: number;
  /** The true spread is within `spreadMs` ± this (the two offsets' bounds added). */
  readonly boundMs: number;
  /** The node whose clock is furthest ahead, and the one furthest behind. */
  readonly ahead: string;
  readonly behind: string;
}

/** How far apart the clocks of `nodes` are (this host's clock cancels out); undefined for fewer than two. */
export function clockSpread(nodes: readonly { readonly node: string; readonly offset: ClockOffset }[]): ClockSpread | undefined {
  if (nodes.length < 2) return undefined;
  let ahead = nodes[0] as (typeof nodes)[number];
  let behind = ahead;
  for (const n of nodes) {
    if (n.offset.offsetMs > ahead.offset.offsetMs) ahead = n;
    if (n.offset.offsetMs < behind.offset.offsetMs) behind = n;
  }
  return {
    spreadMs: ahead.offset.offsetMs - behind.offset.offsetMs,
    boundMs: ahead.offset.boundMs + behind.offset.boundMs,
    ahead: ahead.node,
    behind: behind.node,
  };
}

/** The least the true value can be, given a measurement and its bound (never below 0). */
export function atLeast(valueMs: number, boundMs: number): number {
  return Math.max(0, Math.abs(valueMs) - boundMs);
}
