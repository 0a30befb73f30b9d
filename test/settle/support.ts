/**
 * What every settle test checks after itself: nothing surelock made is left behind — no hold, no
 * ticket, no writer mark in Redis (a lock's counter may stay, with its TTL), no listener on the
 * caller's signals, no timer or socket in this process — and how to wait for a call to settle
 * with a bound that fails the test instead of hanging it.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { eventually } from "../helpers/fixtures.js";
import { traces, type Inspectable } from "../helpers/traces.js";

export { inspectable, traces, type Inspectable } from "../helpers/traces.js";

/**
 * Waits until Redis holds no hold, ticket or writer mark under `prefix`. Clean-up after an
 * interrupted call is sent without being awaited by the caller, so it lands a moment later:
 * this polls Redis state, which no event announces, and fails with what is left at the deadline.
 */
export async function assertNoTrace(redis: Inspectable, prefix = "surelock", ms = 3_000): Promise<void> {
  let left: string[] = [];
  try {
    await eventually(async () => (left = await traces(redis, prefix)).length === 0, ms, "no trace in Redis");
  } catch {
    assert.fail(`left behind in Redis after ${ms} ms: ${left.join("; ")}`);
  }
}

/** Fails if anyone still listens to `signal` (a caller's signal must be let go once the call settled). */
export function assertNoListeners(signal: AbortSignal, what = "the caller's signal"): void {
  assert.equal(getEventListeners(signal, "abort").length, 0, `listeners left on ${what}`);
}

const count = (kind: string): number => process.getActiveResourcesInfo().filter((r) => r === kind).length;

/** The process's timers and sockets now, to compare with after a test closed what it opened. */
export function resources(): { timers: number; sockets: number } {
  return { timers: count("Timeout"), sockets: count("TCPSocketWrap") };
}

/**
 * Waits until the process has no more timers and sockets than `before` (sockets close a turn or
 * two after disconnect(): polled, with a deadline that fails the test with the counts).
 */
export async function assertNoResourcesLeft(before: { timers: number; sockets: number }, ms = 3_000): Promise<void> {
  let now = resources();
  try {
    await eventually(() => {
      now = resources();
      return now.timers <= before.timers && now.sockets <= before.sockets;
    }, ms, "timers and sockets back to what they were");
  } catch {
    assert.fail(`resources left: ${JSON.stringify(now)}, before: ${JSON.stringify(before)}`);
  }
}

/** How a promise settled, and when (ms after `from`). */
export type Settled<T> = { readonly ok: true; readonly value: T; readonly atMs: number } | { readonly ok: false; readonly error: unknown; readonly atMs: number };

/** Waits for `promise` to settle, within `ms` (a hang fails the test), and reports how and when. */
export async function settles<T>(promise: Promise<T>, ms: number, from = performance.now()): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([
      promise.then((value): Settled<T> => ({ ok: true, value, atMs: performance.now() - from }),
        (error: unknown): Settled<T> => ({ ok: false, error, atMs: performance.now() - from })),
      hang,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The error a settled call rejected with (fails if it resolved). */
export function rejection<T>(s: Settled<T>): unknown {
  assert.equal(s.ok, false, "expected a rejection, the call resolved");
  return (s as { error: unknown }).error;
}

/** Asserts an error's stable code (and, for a SurelockError, that the class name matches). */
export function assertCode(error: unknown, code: string): void {
  assert.equal((error as { code?: unknown }).code, code, `expected ${code}, got ${String(error)}`);
}
