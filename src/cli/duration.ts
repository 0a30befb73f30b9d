/** Durations on the command line (`30s`, `500ms`, `2m`, `1h`, or a bare number of ms) and in output. */
import { MAX_DURATION_MS } from "../validate.js";

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const SYNTAX = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;

/** What a duration flag accepts, for error messages. */
export const DURATION_HINT = "a duration such as 500ms, 30s, 2m, 1h or a whole number of ms";

/**
 * Milliseconds for `text`, or undefined when it is not a duration of a whole number of ms
 * within setTimeout's range. Never rounds a fraction of a millisecond away silently.
 */
export function parseDuration(text: string): number | undefined {
  const match = SYNTAX.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * (UNIT_MS[match[2] ?? "ms"] as number);
  const whole = Math.round(ms);
  // 1.1s is 1100.0000000000002 in binary floating point: close enough is exact.
  if (Math.abs(ms - whole) > 1e-6 || whole > MAX_DURATION_MS) return undefined;
  return whole;
}

/** A short human form: `850 ms`, `29.8 s`, `4 min 10 s`, `2 h 5 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) {
    const s = Math.round(ms / 100) / 10;
    return s < 60 ? `${s} s` : "1 min";
  }
  const totalS = Math.round(ms / 1_000);
  if (totalS < 3_600) {
    const min = Math.floor(totalS / 60);
    const s = totalS % 60;
    return s === 0 ? `${min} min` : `${min} min ${s} s`;
  }
  const totalMin = Math.round(totalS / 60);
  const h = Math.floor(totalMin / 60);
  const min = totalMin % 60;
  return min === 0 ? `${h} h` : `${h} h ${min} min`;
}
