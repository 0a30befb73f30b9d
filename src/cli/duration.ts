/**
 * Durations on the command line (`30s`, `500ms`, `2m`, `1h`) and in output. A unit is required:
 * a bare `10` means 10 seconds to a flock user and 10 ms to a Redis user, so it is refused with
 * a suggestion instead of guessed. `0` alone is allowed (`--timeout 0`: one try).
 */
import { MAX_DURATION_MS } from "../validate.js";

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const SYNTAX = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const BARE = /^\d+(?:\.\d+)?$/;

/** What a duration flag accepts, for help and error messages. */
export const DURATION_HINT = "a duration with a unit, such as 500ms, 30s, 2m or 1h";

export type DurationParse = { readonly ms: number } | { readonly error: string };

/**
 * Milliseconds for `text`, or why it is not a duration: a number without a unit (with the
 * likely meaning), a fraction of a millisecond, beyond setTimeout's range, or not a duration.
 * Never rounds a fraction of a millisecond away silently.
 */
export function parseDuration(text: string): DurationParse {
  if (text === "0") return { ms: 0 };
  if (BARE.test(text)) {
    // Small numbers are seconds to most people (flock -w 10, timeout 10); large ones look like ms.
    const guess = Number(text) >= 1_000 ? `${text}ms` : `${text}s`;
    return { error: `a duration needs a unit (ms, s, m or h): did you mean ${guess}?` };
  }
  const match = SYNTAX.exec(text);
  if (!match) return { error: `expected ${DURATION_HINT}` };
  const ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
  const whole = Math.round(ms);
  // 1.1s is 1100.0000000000002 in binary floating point: close enough is exact.
  if (Math.abs(ms - whole) > 1e-6) return { error: "expected a whole number of milliseconds" };
  if (whole > MAX_DURATION_MS) return { error: `expected at most ${formatDuration(MAX_DURATION_MS)}` };
  return { ms: whole };
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
