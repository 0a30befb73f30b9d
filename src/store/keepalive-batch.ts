/**
 * A keep-alive batch on one deployment: the items (renewals and ticket refreshes, of any family)
 * grouped by Cluster slot and cut into chunks, one keepalive.lua call each (src/protocol/keepalive.ts
 * encodes the items and reads the replies back).
 */
import { slotOf } from "../keys.js";
import { firstKey, keepaliveCall, keepaliveResults, targetOf } from "../protocol/keepalive.js";
import type { ScriptCall } from "../scripts/index.js";
import type { KeepaliveItem, KeepaliveResult } from "./types.js";

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
 * items' order. `cluster`: whether the keys of one call must share a slot. `ordered` and `window`:
 * as keepaliveCall (src/protocol/keepalive.ts) takes them.
 */
export async function keepaliveInBatches(
  items: readonly KeepaliveItem[], cluster: boolean, run: (call: ScriptCall<unknown[]>) => Promise<unknown[]>, ordered: boolean, window: number,
): Promise<KeepaliveResult[]> {
  const out = new Array<KeepaliveResult>(items.length);
  await Promise.all(batches(items, cluster).map(async (indexes) => {
    const mine = indexes.map((i) => items[i] as KeepaliveItem);
    const { call, counts } = keepaliveCall(mine, ordered, window);
    const results = keepaliveResults(mine, counts, await run(call));
    indexes.forEach((index, n) => {
      out[index] = results[n] as KeepaliveResult;
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
