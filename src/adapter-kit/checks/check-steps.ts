/**
 * What every check of verifyAdapter is made of: its context, its outcomes (a description when it
 * passed, CheckFailed with every problem, Skipped when it does not apply), and the steps it takes.
 * Every step has a deadline, so a call that never settles fails its check instead of hanging.
 */
import type { RedisAdapter } from "../../adapters/types.js";

/** A check found the adapter wanting; `message` lists every problem. */
export class CheckFailed extends Error {}
/** A check that does not apply to this adapter (or could not be arranged); `message` says why. */
export class Skipped extends Error {}

/** What every check shares: the adapter, the deadline of one step, and the names it may use. */
export interface CheckContext {
  readonly adapter: RedisAdapter;
  readonly timeoutMs: number;
  /** The namespace of the run's keys and channels. */
  readonly namespace: string;
  /** Random, per run: every key is `<namespace>:{<run>}:<part>`, so one run's keys share a slot. */
  readonly run: string;
  readonly dropSubscribers: (() => void | Promise<void>) | false | undefined;
  readonly replicas: number;
  /** Keys the checks wrote (all with a PTTL), deleted at the end. */
  readonly written: Set<string>;
  /** The prefix the adapter puts on keys, once the key-prefix check saw it. */
  keyPrefix: string | undefined;
}

export type Check = (ctx: CheckContext) => Promise<string>;

/** `work` within the step deadline; a rejection passes through, a missing reply fails the check. */
export function step<T>(ctx: CheckContext, what: string, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
    work.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (error: unknown) => { clearTimeout(timer); reject(error); },
    );
  });
}

/** Calls `fn`, turning a synchronous throw into a rejection (an adapter may throw instead of rejecting). */
export function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A call that must resolve: a rejection fails the check, naming the call. */
export async function must<T>(ctx: CheckContext, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await step(ctx, what, call(fn));
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    throw new CheckFailed(`${what} rejected: ${describeError(error)}`);
  }
}

/** A call that must reject: resolving (with an Error object too, as some clients do) fails the check. */
export async function mustReject(ctx: CheckContext, what: string, fn: () => Promise<unknown>): Promise<unknown> {
  let value: unknown;
  try {
    value = await step(ctx, what, call(fn));
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    return error;
  }
  if (value instanceof Error) throw new CheckFailed(`${what} resolved with an Error object (${value.message}); it must reject with it`);
  throw new CheckFailed(`${what} resolved with ${show(value)}; it must reject`);
}

/** The name of a key of this run: `<namespace>:{<run>}:<part>` (one slot for the whole run). */
export const key = (ctx: CheckContext, part: string): string => `${ctx.namespace}:{${ctx.run}}:${part}`;

/** Polls `probe` (a Redis round trip each time) until it answers true or the deadline passes. */
export async function eventually(ctx: CheckContext, what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ctx.timeoutMs;
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new CheckFailed(`${what}: not within ${ctx.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** A value as a check's message names it: its type, and its text where it has one. */
export function show(value: unknown): string {
  if (value instanceof Error) return `Error(${JSON.stringify(value.message)})`;
  if (typeof value === "string") return `${JSON.stringify(value)} (string)`;
  if (typeof value === "number") return `${value} (number)`;
  if (typeof value === "bigint") return `${value}n (bigint)`;
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return `[${value.map(show).join(", ")}]`;
  if (Buffer.isBuffer(value)) return `a Buffer (${JSON.stringify(value.toString("utf8"))})`;
  return typeof value;
}

/** An error as a check's message names it: its class and its message. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : show(error);
}

/** Fails with every problem at once, or returns `passed`. */
export function verdict(problems: readonly string[], passed: string): string {
  if (problems.length > 0) throw new CheckFailed(problems.join("; "));
  return passed;
}

/** Compares a reply to what Redis answers, part by part, naming each part that differs. */
export function compare(problems: string[], label: string, got: unknown, want: unknown): void {
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) {
      problems.push(`${label}: expected an array, got ${show(got)}`);
      return;
    }
    if (got.length !== want.length) {
      problems.push(`${label}: expected ${want.length} elements, got ${got.length} (${show(got)})`);
      return;
    }
    want.forEach((w, i) => compare(problems, `${label}[${i}]`, got[i], w));
    return;
  }
  if (!Object.is(got, want)) problems.push(`${label}: expected ${show(want)}, got ${show(got)}`);
}
