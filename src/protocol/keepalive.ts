/**
 * The keep-alive batch's protocol: renewals and ticket refreshes of every family, encoded into one
 * keepalive.lua call in its layout (a kind letter and arguments per item, the item's keys in
 * order), and its replies read back into one result per item. Which items share a call (a Cluster
 * slot, a chunk) is the store's (src/store/keepalive-batch.ts).
 */
import { tombstoneOf, type MultiKeys } from "../keys.js";
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { KeepaliveItem, KeepaliveResult, LockTarget } from "../store/types.js";
import { holdState, ticketState } from "./holds.js";
import { combineStates } from "./multi.js";
import { parseArray } from "./reply.js";

/** The keep-alive script. */
export const keepaliveScripts = {
  keepalive: bind(LUA.keepalive, true, parseArray("keepalive")),
} as const;

/** One keepalive.lua call, and how many script items each of its items took (a multi-key one takes one per key). */
export interface KeepaliveCall {
  readonly call: ScriptCall<unknown[]>;
  readonly counts: readonly number[];
}

/**
 * The call that renews or refreshes `items`. `ordered`: a mutex waiter's ticket is in quorum
 * mode's ordered line (refreshed where it stands, never put back). `window`: the replay window
 * (ms), which an extend that shortens a mutex hold needs (keepalive.lua, 'X').
 */
export function keepaliveCall(items: readonly KeepaliveItem[], ordered: boolean, window: number): KeepaliveCall {
  const keys: string[] = [];
  const args: (string | number)[] = [];
  const counts = items.map((item) => encode(item, keys, args, ordered, window));
  return { call: keepaliveScripts.keepalive.call({}, {}, { keys, args }), counts };
}

/** The call's replies, one result per item (a multi-key hold's per-key replies combined into one). */
export function keepaliveResults(items: readonly KeepaliveItem[], counts: readonly number[], replies: readonly unknown[]): KeepaliveResult[] {
  const sent = counts.reduce((a, b) => a + b, 0);
  if (replies.length !== sent) throw new Error(`keepalive.lua answered ${replies.length} items of ${sent}`);
  let j = 0;
  return items.map((item, n) => {
    const mine = replies.slice(j, (j += counts[n] as number));
    return item.kind === "renew" ? combineStates(mine.map((r) => holdState("keepalive", r))) : ticketState(mine[0]);
  });
}

/** The lock an item renews or waits for. */
export function targetOf(item: KeepaliveItem): LockTarget {
  return item.kind === "renew" ? item.ref.target : item.target;
}

/** The first key an item's encoding names: the one a Cluster routes its call by. */
export function firstKey(item: KeepaliveItem): string {
  const target = targetOf(item);
  if (target.family === "multi") return target.keys.each[0]?.lock ?? "";
  return target.family === "exclusive" ? target.keys.lock : target.keys.state;
}

/** An item's kind, arguments and keys, in keepalive.lua's layout; returns how many script items it took. */
function encode(item: KeepaliveItem, keys: string[], args: (string | number)[], ordered: boolean, window: number): number {
  const target = targetOf(item);
  if (target.family === "multi") return encodeMulti(item, target.keys, keys, args, window);
  if (item.kind === "renew") {
    if (target.family === "exclusive") keys.push(target.keys.lock);
    else keys.push(target.keys.state, target.keys.holders, target.keys.entries);
    const kind = target.family === "exclusive" ? "x" : "s";
    args.push(item.shorten === true ? kind.toUpperCase() : kind, item.ref.hold, item.ttlMs);
    // A mutex extend may cut the hash's life below the replay window (keepalive.lua).
    if (item.shorten === true && kind === "x") args.push(window);
    return 1;
  }
  const a = item.ask;
  if (target.family === "exclusive") {
    keys.push(target.keys.lock, target.keys.queue, target.keys.tickets, tombstoneOf(target.keys, a.hold));
    args.push(ordered ? "o" : "q", a.hold, a.ticketLeaseMs, a.ttlMs, a.owner);
  } else {
    const k = target.keys;
    keys.push(k.state, k.holders, k.entries, k.queue, k.tickets);
    args.push("Q", a.hold, a.ticketLeaseMs, a.ttlMs, a.owner, a.mode, a.permits);
  }
  return 1;
}

/**
 * A keep-alive item of a multi-key hold or waiter: a renewal is one mutex renewal ('x') per key, a
 * waiter one 'm' item over every key. Returns how many items it took.
 */
function encodeMulti(item: KeepaliveItem, multi: MultiKeys, keys: string[], args: (string | number)[], window: number): number {
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
