/**
 * What every settle test checks after itself: nothing surelock made is left behind — no hold, no
 * ticket, no writer mark in Redis (a lock's counter may stay, with its TTL), no listener on the
 * caller's signals, no timer or socket in this process — and how to wait for a call to settle
 * with a bound that fails the test instead of hanging it.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { eventually } from "../helpers/fixtures.js";

/** Something that answers Redis commands: a RedisServer of the topology helper, or a MemoryRedis. */
export interface Inspectable {
  command(...args: (string | number)[]): Promise<unknown>;
}

/** The adapter-shaped MemoryRedis as an Inspectable. */
export const inspectable = (adapter: { command(args: readonly (string | number)[]): Promise<unknown> }): Inspectable => ({
  command: (...args) => adapter.command(args),
});

/** What of one surelock key is still there that should not be (empty when it is clean). */
async function traceOf(redis: Inspectable, key: string): Promise<string[]> {
  const type = String(await redis.command("TYPE", key));
  const found: string[] = [];
  const pttl = Number(await redis.command("PTTL", key));
  if (pttl === -1) found.push(`${key} has no TTL`);
  if (type === "list") {
    const n = Number(await redis.command("LLEN", key));
    if (n > 0) found.push(`${key}: ${n} ticket(s) still in line`);
  } else if (type === "zset" && !key.endsWith(":released")) {
    // (A mutex's `released` zset holds tombstones of entries given back: expected, and short-lived.)
    const live = (await redis.command("ZRANGEBYSCORE", key, "(0", "+inf")) as string[];
    if (live.length > 0) found.push(`${key}: ${live.length} hold(s) still live`);
  } else if (type === "hash") {
    const fields = ((await redis.command("HKEYS", key)) as string[]).sort();
    if (key.endsWith(":tickets") && fields.length > 0) found.push(`${key}: tickets ${fields.join(",")}`);
    if (key.endsWith(":lock") && fields.includes("o")) found.push(`${key}: still held (${fields.join(",")})`);
    if (key.endsWith(":state")) {
      if (fields.includes("w")) found.push(`${key}: writer mark left`);
      const holds = fields.filter((f) => f.startsWith("s:"));
      if (holds.length > 0) found.push(`${key}: hold record(s) ${holds.join(",")}`);
    }
    if (key.endsWith(":entries") && fields.length > 0) found.push(`${key}: writer entries ${fields.join(",")}`);
  }
  return found;
}

/** Every trace surelock left under `prefix`. */
export async function traces(redis: Inspectable, prefix = "surelock"): Promise<string[]> {
  const keys = (await redis.command("KEYS", `${prefix}:*`)) as string[];
  return (await Promise.all(keys.map((k) => traceOf(redis, k)))).flat();
}

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
