/**
 * A mutex's protocol (one lock hash, its queue and tickets): the calls of acquire, release,
 * leave-queue and step-aside, built from the store's requests. Their replies are laid out as every
 * lock family's (holds.ts).
 */
import type { ExclusiveKeys } from "../keys.js";
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { AcquireCall, Ask, HoldRef } from "../store/types.js";
import { joinOf, parseAcquire, parseRelease, type AcquireReply, type CallOptions, type ReleaseReply } from "./holds.js";
import { parseInt } from "./reply.js";

/** A mutex's scripts. */
export const exclusiveScripts = {
  acquire: bind(LUA.acquire, true, parseAcquire("acquire")),
  release: bind(LUA.release, false, parseRelease("release")),
  leaveQueue: bind(LUA.leaveQueue, false, parseInt("leave-queue")),
  stepAside: bind(LUA.stepAside, false, parseInt("step-aside")),
} as const;

/** One attempt; in quorum mode's ordered line a waiter stands at its `order`. */
export function acquireCall(keys: ExclusiveKeys, call: AcquireCall, o: CallOptions): ScriptCall<AcquireReply> {
  const { ask, entry } = call;
  return exclusiveScripts.acquire.call(
    { lock: keys.lock, queue: keys.queue, tickets: keys.tickets },
    { owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, join: joinOf(call.reentry), ticketLease: ask.ticketLeaseMs, window: o.window },
    o.ordered && ask.order !== undefined ? { args: [ask.order] } : undefined,
  );
}

/**
 * Gives `entry` of `ref`'s hold back. `here`: the caller's instance, when it hands a grant in the
 * reply over itself (the release then announces none to it).
 */
export function releaseCall(keys: ExclusiveKeys, ref: HoldRef, entry: string, here: string, o: CallOptions): ScriptCall<ReleaseReply> {
  return exclusiveScripts.release.call(
    { lock: keys.lock, queue: keys.queue, tickets: keys.tickets, channel: keys.channel, released: keys.released },
    { hold: ref.hold, entry, token: ref.token.toString(), keep: o.keep, window: o.window, grant: o.grant, publish: o.publish, here },
  );
}

/** A waiter leaves the line, giving back a hold founded for its ticket. */
export function leaveCall(keys: ExclusiveKeys, ticket: string, o: CallOptions): ScriptCall<number> {
  return exclusiveScripts.leaveQueue.call(
    { lock: keys.lock, queue: keys.queue, tickets: keys.tickets, channel: keys.channel },
    { ticket, keep: o.keep, grant: o.grant, publish: o.publish },
  );
}

/** Whether a leave-queue reply says it gave back a hold founded for the ticket (the lock may be free now). */
export function leftHold(reply: number): boolean {
  return reply === 2;
}

/**
 * Quorum mode, on one node: gives back a hold the ticket founded there without winning a majority,
 * and keeps (or puts) the ticket in its place in the ordered line, at `order` (the ask's).
 */
export function stepAsideCall(keys: ExclusiveKeys, ask: Ask, order: number, o: CallOptions): ScriptCall<number> {
  return exclusiveScripts.stepAside.call(
    { lock: keys.lock, queue: keys.queue, tickets: keys.tickets, channel: keys.channel },
    { ticket: ask.hold, order, ticketLease: ask.ticketLeaseMs, ttl: ask.ttlMs, owner: ask.owner, keep: o.keep, publish: o.publish },
  );
}
