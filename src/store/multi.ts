/**
 * A multi-key hold on one deployment: the calls of acquire-multi, release-multi and leave-multi
 * (one script call each, all keys at once), and how the watchdog and `isHeld` see such a hold — it
 * is one mutex hold on each key's lock hash, so renewal and checks use the mutex's per-key items
 * and the hold counts as held only where every key holds it.
 */
import { tombstoneOf, type MultiKeys } from "../keys.js";
import { scripts, type HoldState, type MultiAcquireReply, type ReleaseReply, type ScriptCall } from "../scripts/index.js";
import type { AcquireCall, AcquireResult, KeepaliveItem, LockTarget } from "./types.js";

type MultiTarget = Extract<LockTarget, { readonly family: "multi" }>;

/** What a freeing call needs besides the keys: the counter retention, the replay window, single-node grants, the publish command. */
export interface HandOverOptions {
  readonly keep: number;
  readonly window: number;
  readonly grant: "0" | "1";
  readonly publish: "PUBLISH" | "SPUBLISH";
}

/** Each key's lock, queue, tickets, channel, and the tombstone `entry` leaves there when released. */
const freeingKeys = (keys: MultiKeys, entry: string): string[] =>
  keys.each.flatMap((k) => [k.lock, k.queue, k.tickets, k.channel, tombstoneOf(k, entry)]);

/** One attempt on every key at once (a waiter that stops holding lines back hands the free keys on). */
export function acquireMultiCall(keys: MultiKeys, call: AcquireCall, o: HandOverOptions): ScriptCall<MultiAcquireReply> {
  const { ask, entry, join } = call;
  return scripts.acquireMulti.call({}, {
    owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, join, ticketLease: ask.ticketLeaseMs, keep: o.keep, grant: o.grant, publish: o.publish,
  }, { keys: freeingKeys(keys, entry) });
}

/** The reply as the store's result: `ref.token` and `leaseToken` are the first key's, `ref.tokens` every key's. */
export function multiResult(target: MultiTarget, reply: MultiAcquireReply): AcquireResult {
  if (reply.status === "busy" || reply.status === "gone") return reply;
  return {
    status: reply.status,
    ref: { target, hold: reply.hold, token: reply.tokens[0] ?? 0n, tokens: reply.tokens },
    pttlMs: reply.pttlMs,
    leaseToken: reply.leaseTokens[0] ?? 0n,
    leaseTokens: reply.leaseTokens,
  };
}

/** Gives back one entry on every key; the last frees them all, each handed to its queue. */
export function releaseMultiCall(keys: MultiKeys, hold: string, entry: string, o: HandOverOptions): ScriptCall<ReleaseReply> {
  return scripts.releaseMulti.call({}, { hold, entry, ...o }, { keys: freeingKeys(keys, entry) });
}

/** A waiter leaves every queue, and gives back a hold founded for its ticket. */
export function leaveMultiCall(keys: MultiKeys, ticket: string, o: HandOverOptions): ScriptCall<number> {
  return scripts.leaveMulti.call({}, { ticket, keep: o.keep, grant: o.grant, publish: o.publish }, { keys: freeingKeys(keys, ticket) });
}

/** The hold's state from each key's: held only where every key holds it; taken if any key has another hold. */
export function combineStates(states: readonly HoldState[]): HoldState {
  if (states.every((s) => s === "held")) return "held";
  return states.includes("taken") ? "taken" : "gone";
}

/**
 * A keep-alive item of a multi-key hold or waiter, in keepalive.lua's layout: a renewal is one
 * mutex renewal ('x') per key, a waiter one 'm' item over every key. Returns how many items it took.
 */
export function encodeMulti(item: KeepaliveItem, multi: MultiKeys, keys: string[], args: (string | number)[], window: number): number {
  if (item.kind === "renew") {
    for (const k of multi.each) {
      keys.push(k.lock);
      if (item.shorten === true) args.push("X", item.ref.hold, item.ttlMs, window);
      else args.push("x", item.ref.hold, item.ttlMs);
    }
    return multi.each.length;
  }
  for (const k of multi.each) keys.push(k.lock, k.queue, k.tickets, tombstoneOf(k, item.ask.hold));
  args.push("m", item.ask.hold, item.ask.ticketLeaseMs, item.ask.ttlMs, item.ask.owner, multi.each.length);
  return 1;
}
