/**
 * A lock over several keys at once: one hold founded on each key's mutex in one script call, all
 * or none, on the mutex's own keys (so it excludes `mutex(key)` of any of its keys, and the other
 * way round). It waits in every key's queue under one ticket and is told its turn, never granted a
 * key alone, so it never holds some keys while it waits for others; while one of its keys is held
 * it stands aside in the other queues. So two multiLocks of overlapping sets, taken in any order,
 * cannot deadlock, nor can a multiLock and a flow that holds one of its keys and asks for another
 * (src/scripts/lib/multi.lua).
 */
import { InvalidArgumentError } from "../errors.js";
import { slotOf } from "../keys.js";
import type { Engine } from "../engine.js";
import { checkKey } from "../validate.js";
import { Lock } from "./lock.js";

/** Options of `Surelock.multiLock()`. */
export interface MultiLockOptions {
  /** Lease length in ms (default: the Surelock's `ttl`). The watchdog renews every key at ttl/3. */
  readonly ttl?: number;
}

const INTERNAL = Symbol("surelock.multiLock");

/**
 * Several mutexes taken and released as one lock: one lease, one signal, one fencing token per key
 * (`lease.fencingTokens`). Inside `withLock`, a multiLock of the same set re-enters; a mutex of one
 * of its keys, or a multiLock of a set that shares some but not all of its keys, throws a
 * DeadlockError (take every key you need in one multiLock).
 */
export class MultiLock extends Lock {
  /** The keys, in the order given. */
  readonly keys: readonly string[];

  private constructor(token: typeof INTERNAL, rt: Engine, keys: readonly string[], ttlMs: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.multiLock()");
    const multi = rt.keys.multi(keys);
    const locks = multi.each.map((k) => k.lock);
    super(rt, {
      key: multi.key,
      target: { family: "multi", keys: multi },
      // One identity per set, whatever the order of its keys.
      lockId: `multi:${[...locks].sort().join("\n")}`,
      sectionIds: locks,
      channel: multi.each.map((k) => k.channel),
      mode: "x",
      ttlMs,
      sharesByOwner: true,
      reentry: (section) => {
        if (section) return { kind: "join", hold: section.lease._hold.ref.hold };
        const held = multi.each.find((k) => rt.sections.current(k.lock));
        if (!held) return { kind: "fresh" };
        return { kind: "deadlock", why: `this flow holds "${held.key}" already (a mutex, or a multiLock of another set): ` +
          "take every key it needs in one multiLock" };
      },
    });
    this.keys = keys;
  }

  /** @internal Use `Surelock.multiLock()`. */
  static _create(rt: Engine, keys: readonly string[], ttlMs: number): MultiLock {
    return new MultiLock(INTERNAL, rt, keys, ttlMs);
  }
}

/**
 * Checks a multiLock's keys: a non-empty array of distinct keys; on a Cluster, of one slot (one
 * script takes them all), which keys with a common hash tag (`{order}:a`, `{order}:b`) share.
 */
export function checkMultiKeys(rt: Engine, value: unknown, cluster: boolean): readonly string[] {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidArgumentError("keys", value, "a non-empty array of keys");
  const keys = (value as unknown[]).map((k, i) => checkKey(`keys[${i}]`, k));
  keys.forEach((k, i) => {
    if (keys.indexOf(k) !== i) throw new InvalidArgumentError(`keys[${i}]`, k, "a key not already in the array");
  });
  if (cluster) {
    const slots = new Map<number, string[]>();
    for (const key of keys) {
      const slot = slotOf(rt.keys.exclusive(key).lock);
      slots.set(slot, [...(slots.get(slot) ?? []), key]);
    }
    if (slots.size > 1) {
      const where = [...slots].map(([slot, ks]) => `${ks.map((k) => JSON.stringify(k)).join(", ")} in slot ${slot}`).join("; ");
      throw new InvalidArgumentError("keys", keys, `keys of one Redis Cluster slot, so that one script can take them all: give them a ` +
        `common hash tag, such as "{order}:a" and "{order}:b" (${where})`);
    }
  }
  return keys;
}
