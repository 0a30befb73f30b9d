/**
 * What an acquire's answers mean for the waiting room: an attempt's result and a grant, read as an
 * obtained hold (and the validity it rests on), a reason to keep waiting, or a refusal.
 */
import { ConflictError, LockLostError } from "../errors.js";
import type { AcquireCall, AcquireResult, HoldRef } from "../store/types.js";
import type { Waiter, WaitEvent } from "./waiter.js";

/** A hold obtained, and what bounds its validity. */
export interface Obtained {
  readonly ref: HoldRef;
  /** The entry the lease stands for. */
  readonly entry: string;
  readonly entered: boolean;
  /** Send instant of the request whose answer (or whose place in line) the validity rests on. */
  readonly sentAt: number;
  /** What was left of the hold's lease at that answer. */
  readonly pttlMs: number;
  readonly attempts: number;
}

/** The attempt's result as an obtained hold, or undefined when it only says "wait"; throws a refusal. */
export function obtained(call: AcquireCall, result: AcquireResult, sentAt: number, attempts: number): Obtained | undefined {
  const key = call.target.keys.key;
  if (result.status === "busy") return undefined;
  if (result.status === "gone" || result.status === "conflict") throw refusal(key, result, call.ask.permits);
  return { ref: result.ref, entry: call.entry, entered: result.status === "entered", sentAt, pttlMs: result.pttlMs, attempts };
}

/**
 * A grant as an obtained hold. Found by a refresh, its validity rests on that refresh; announced,
 * on the latest "queued" answer that ran before it (its counter is below the grant's token): the
 * ticket was live then, so the grant's PTTL reached at least that instant plus the ticket lease.
 * Undefined when no such answer is known.
 */
export function granted(waiter: Waiter, event: Extract<WaitEvent, { kind: "granted" }>, attempts: number): Obtained | undefined {
  const ref: HoldRef = { target: waiter.call.target, hold: waiter.ticket, token: event.token };
  const entry = waiter.call.entry;
  if (event.sentAt !== undefined) return { ref, entry, entered: false, sentAt: event.sentAt, pttlMs: event.pttlMs, attempts };
  const queuedAt = waiter.queuedBefore(event.token);
  if (queuedAt === undefined) return undefined;
  return { ref, entry, entered: false, sentAt: queuedAt, pttlMs: Math.min(event.pttlMs, waiter.call.ask.ticketLeaseMs), attempts };
}

/** An attempt that can neither succeed nor wait (`permits`: how many it asked for). */
export function refusal(key: string, result: Extract<AcquireResult, { status: "gone" | "conflict" }>, permits: number): Error {
  if (result.status === "gone") return new LockLostError(key, "expired", "the hold to re-enter is gone");
  if (permits > result.limit) return new ConflictError(key, `asked for ${permits} permits of a semaphore that has ${result.limit}`);
  return new ConflictError(key, `a semaphore of ${result.limit} permits is stored under this key, and this caller ` +
    "asked for another number: every caller of one semaphore must agree (setPermits() changes it on purpose)");
}
