/** A server's clock against this host's: measured over TIME round trips, and judged. */
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import { atLeast, clockOffset, parseTime, type ClockOffset, type TimeSample } from "../clock-offset.js";
import { formatDuration } from "../duration.js";
import type { Check } from "./check.js";

/** TIME round trips per server; the shortest one bounds the offset best. */
const TIME_SAMPLES = 5;
/** NTP keeps clocks within milliseconds: a clock further off than this is not synchronised. */
export const CLOCK_WARN_MS = 1_000;

/** The server's clock against this host's, from the TIME round trip with the shortest time. */
export async function measureClock(server: Redis): Promise<ClockOffset | undefined> {
  // performance.timeOrigin + performance.now() is the wall clock with sub-ms resolution (Date.now()
  // has 1 ms), on one monotonic timeline for the whole measurement.
  const now = (): number => performance.timeOrigin + performance.now();
  await server.call("TIME"); // the first call may pay for a cold connection path
  const samples: TimeSample[] = [];
  for (let i = 0; i < TIME_SAMPLES; i++) {
    const sentAtMs = now();
    const reply = await server.call("TIME");
    const receivedAtMs = now();
    const serverUs = parseTime(reply);
    if (serverUs === undefined) return undefined;
    samples.push({ sentAtMs, receivedAtMs, serverUs });
  }
  return clockOffset(samples);
}

/** Offsets below 10 ms with decimals (two below 1 ms), larger ones as durations. */
export function formatOffset(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1) return `${abs.toFixed(2)} ms`;
  return abs < 10 ? `${abs.toFixed(1)} ms` : formatDuration(abs);
}

/** The `clock` check: warns when the offset is surely beyond CLOCK_WARN_MS. */
export function checkClock(clock: ClockOffset | undefined, node: string, counterRetentionMs: number): Check {
  if (!clock) return { node, check: "clock", status: "warn", detail: "TIME did not answer as Redis does: the server's clock could not be compared with this host's" };
  const measured = { offsetMs: round(clock.offsetMs), boundMs: round(clock.boundMs) };
  const direction = clock.offsetMs >= 0 ? "ahead of" : "behind";
  const what = `TIME ${formatOffset(clock.offsetMs)} ${direction} this host's clock (± ${formatOffset(clock.boundMs)}, best of ${TIME_SAMPLES} round trips)`;
  if (atLeast(clock.offsetMs, clock.boundMs) <= CLOCK_WARN_MS) return { node, check: "clock", status: "ok", detail: what, ...measured };
  return {
    node, check: "clock", status: "warn", ...measured,
    detail: `${what}: one of the two clocks is not synchronised. A lock whose counter expired restarts its fencing tokens from ` +
      "this server's clock, above the old ones only if that clock never steps back by more than the counter retention " +
      `(${formatDuration(counterRetentionMs)}); an unsynchronised clock is the one that gets stepped when it is corrected: run NTP (chrony, ` +
      "systemd-timesyncd) on the server and on this host",
  };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
