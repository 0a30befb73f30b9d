/**
 * A keep-alive batch on one deployment: the items (renewals and ticket refreshes, of any family)
 * encoded in keepalive.lua's layout, grouped by Cluster slot and cut into chunks, one script call
 * each, and each call's replies read back into one result per item.
 */
import { slotOf, tombstoneOf } from "../keys.js";
import { holdState, scripts, ticketState, type ScriptCall } from "../scripts/index.js";
import { combineStates, encodeMulti } from "./multi.js";
import type { KeepaliveItem, KeepaliveResult, LockTarget } from "./types.js";

/**
 * What one keep-alive call may cost, in renewals of one mutex (costOf). A renewal costs Redis 3 to
 * 5 µs (bench W5: 1.66 ms per call of 500 on one day; 0.72 ms per call of 150, and 2.3 ms for the
 * longest, on a machine 2.5 times slower), so a call of 100 blocks other clients for well under
 * 2 ms even there. Calls are sized by cost, not by item count. Larger batches are split and the
 * parts pipelined: still one round trip per node and tick.
 */
export const KEEPALIVE_CHUNK = 100;

/**
 * Renews or refreshes every item, the calls made by `run` side by side; the results are in the
 * items' order. `cluster`: whether the keys of one call must share a slot. `ordered`: a mutex
 * waiter's ticket is in quorum mode's ordered line (refreshed where it stands, never put back).
 * `window`: the replay window (ms), which an extend that shortens a mutex hold needs (keepalive.lua, 'X').
 */
export async function keepaliveInBatches(
  items: readonly KeepaliveItem[], cluster: boolean, run: (call: ScriptCall<unknown[]>) => Promise<unknown[]>, ordered: boolean, window: number,
): Promise<KeepaliveResult[]> {
  const out = new Array<KeepaliveResult>(items.length);
  await Promise.all(batches(items, cluster).map(async (indexes) => {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    // A multi-key hold is renewed key by key: its items' replies are combined into one.
    const counts = indexes.map((i) => encode(items[i] as KeepaliveItem, keys, args, ordered, window));
    const replies = await run(scripts.keepalive.call({}, {}, { keys, args }));
    const sent = counts.reduce((a, b) => a + b, 0);
    if (replies.length !== sent) throw new Error(`keepalive.lua answered ${replies.length} items of ${sent}`);
    let j = 0;
    indexes.forEach((index, n) => {
      const count = counts[n] as number;
      const mine = replies.slice(j, (j += count));
      out[index] = (items[index] as KeepaliveItem).kind === "renew"
        ? combineStates(mine.map((r) => holdState("keepalive", r))) : ticketState(mine[0]);
    });
  }));
  return out;
}

/** Item indexes per call: one slot per call in a Cluster (a script's keys must share one), in chunks. */
function batches(items: readonly KeepaliveItem[], cluster: boolean): number[][] {
  const groups = new Map<number, number[]>();
  items.forEach((item, i) => {
    const slot = cluster ? slotOf(firstKey(item)) : 0;
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  });
  const out: number[][] = [];
  for (const group of groups.values()) {
    let chunk: number[] = [];
    let cost = 0;
    for (const i of group) {
      const c = costOf(items[i] as KeepaliveItem);
      if (chunk.length > 0 && cost + c > KEEPALIVE_CHUNK) {
        out.push(chunk);
        chunk = [];
        cost = 0;
      }
      chunk.push(i);
      cost += c;
    }
    if (chunk.length > 0) out.push(chunk);
  }
  return out;
}

/**
 * What an item costs Redis, in renewals of one mutex (2 or 3 commands: HMGET, PTTL, PEXPIRE): a
 * multi-key renewal one per key; a waiter's refresh three, a multi-key waiter's three per key (it
 * reads and refreshes its ticket, the lock and its tombstone in every queue: about 9 commands per
 * queue, counted in test/scripts/line-cost.test.ts). Bench WM, 1,000 waiters on a loaded machine:
 * weighed as a renewal, a keepalive call of mutex waiters cost Redis 976 µs of CPU, one of
 * multiLock waiters 419 µs; weighed three, 446 and 412 µs.
 */
function costOf(item: KeepaliveItem): number {
  const target = targetOf(item);
  const each = item.kind === "renew" ? 1 : 3;
  return target.family === "multi" ? target.keys.each.length * each : each;
}

function targetOf(item: KeepaliveItem): LockTarget {
  return item.kind === "renew" ? item.ref.target : item.target;
}

function firstKey(item: KeepaliveItem): string {
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
