/**
 * A shared lock's protocol (a semaphore's permits, a read-write lock's sides: one state hash, its
 * holders and entries, queue and tickets): the calls of acquire-shared, release-shared,
 * leave-queue-shared and set-permits, built from the store's requests, and set-permits' reply.
 */
import type { SharedKeys } from "../keys.js";
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { AcquireCall, Grant, HoldRef, SharedTarget } from "../store/types.js";
import { joinOf, parseAcquire, parseRelease, type AcquireReply, type CallOptions, type ReleaseReply } from "./holds.js";
import { coded, int, parseInt, unexpected } from "./reply.js";

/** What a change of a semaphore's limit did: `previous` is 0 where none was stored. */
export type SetPermitsReply =
  | { readonly status: "set"; readonly previous: number; readonly grants: readonly Grant[] }
  | { readonly status: "replayed" };

/** Reads a set-permits reply. */
export function parseSetPermits(reply: unknown): SetPermitsReply {
  const [code, previous, ...rest] = coded("set-permits", reply);
  if (code === 2) return { status: "replayed" };
  if (code !== 1) return unexpected("set-permits", reply);
  // The grants are laid out as a release's.
  const freed = parseRelease("set-permits")([1, ...rest]);
  if (freed.status !== "freed") return unexpected("set-permits", reply);
  return { status: "set", previous: int("set-permits", reply, previous), grants: freed.grants };
}

/** A shared lock's scripts. */
export const sharedScripts = {
  acquireShared: bind(LUA.acquireShared, true, parseAcquire("acquire-shared")),
  releaseShared: bind(LUA.releaseShared, false, parseRelease("release-shared")),
  leaveQueueShared: bind(LUA.leaveQueueShared, false, parseInt("leave-queue-shared")),
  setPermits: bind(LUA.setPermits, true, parseSetPermits),
} as const;

/** The lock's keys, as every script of a shared lock but the acquire takes them. */
const lockKeys = (k: SharedKeys): { state: string; holders: string; entries: string; queue: string; tickets: string; channel: string } =>
  ({ state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel });

/** One attempt, with the limit the acquirer assumes (a semaphore's; 0 for a read-write lock). */
export function acquireCall(target: SharedTarget, call: AcquireCall, o: CallOptions): ScriptCall<AcquireReply> {
  const { ask, entry } = call;
  const k = target.keys;
  return sharedScripts.acquireShared.call(
    { state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets },
    {
      owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, mode: ask.mode, permits: ask.permits, limit: target.limit,
      join: joinOf(call.reentry), ticketLease: ask.ticketLeaseMs, keep: o.keep,
    },
  );
}

/** Gives `entry` of `ref`'s hold back; the last entry frees the hold's permits, granted to the queue's heads. */
export function releaseCall(keys: SharedKeys, ref: HoldRef, entry: string, o: CallOptions): ScriptCall<ReleaseReply> {
  return sharedScripts.releaseShared.call(lockKeys(keys), { hold: ref.hold, entry, window: o.window, keep: o.keep, grant: o.grant, publish: o.publish });
}

/** A waiter leaves the line, giving back a hold founded for its ticket. */
export function leaveCall(keys: SharedKeys, ticket: string, o: CallOptions): ScriptCall<number> {
  return sharedScripts.leaveQueueShared.call(lockKeys(keys), { ticket, window: o.window, keep: o.keep, grant: o.grant, publish: o.publish });
}

/** Stores a semaphore's limit under the change id `id` (a replay changes nothing). */
export function setPermitsCall(keys: SharedKeys, limit: number, id: string, o: CallOptions): ScriptCall<SetPermitsReply> {
  return sharedScripts.setPermits.call(lockKeys(keys), { limit, id, window: o.window, keep: o.keep, grant: o.grant, publish: o.publish });
}

/** The grants a change of the limit made (a raised limit lets waiters in). */
export function grantsOf(reply: SetPermitsReply): readonly Grant[] {
  return reply.status === "set" ? reply.grants : [];
}
