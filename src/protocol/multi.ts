/**
 * A multiLock's protocol (several mutexes held as one hold, one script call for all keys at once):
 * the calls of acquire-multi, release-multi and leave-multi, acquire-multi's reply, and how such a
 * hold is checked — it is one mutex hold on each key's lock hash, so renewal and checks use the
 * mutex's per-key items and the hold counts as held only where every key holds it.
 */
import { tombstoneOf, type MultiKeys } from "../keys.js";
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { AcquireCall, AcquireResult, HoldState, LockTarget } from "../store/types.js";
import { checkCall, joinOf, parseRelease, type CallOptions, type ReleaseReply } from "./holds.js";
import { coded, int, parseInt, text, unexpected } from "./reply.js";

type MultiTarget = Extract<LockTarget, { readonly family: "multi" }>;

/** What an attempt on several mutexes at once got: as AcquireReply, with a token per key (in KEYS order). */
export type MultiAcquireReply =
  | {
    readonly status: "founded" | "entered"; readonly hold: string; readonly pttlMs: number;
    /** Each key's own token on this node; `leaseTokens` the ones its quorum chose (field l), or the same. */
    readonly tokens: readonly bigint[]; readonly leaseTokens: readonly bigint[];
  }
  | { readonly status: "busy"; readonly waitMs: number; readonly position: number; readonly counter: bigint }
  | { readonly status: "gone" };

/** Reads an acquire-multi reply. */
export function parseAcquireMulti(reply: unknown): MultiAcquireReply {
  const s = "acquire-multi";
  const [code, a, b, c, ...rest] = coded(s, reply);
  if (code === 1 || code === 2) {
    const all = [c, ...rest];
    if (all.length === 0 || all.length % 2 !== 0) unexpected(s, reply);
    const tokens: bigint[] = [];
    const leaseTokens: bigint[] = [];
    for (let i = 0; i < all.length; i += 2) {
      tokens.push(BigInt(int(s, reply, all[i])));
      leaseTokens.push(BigInt(int(s, reply, all[i + 1])));
    }
    return { status: code === 1 ? "founded" : "entered", hold: text(s, reply, a), pttlMs: int(s, reply, b), tokens, leaseTokens };
  }
  if (code === 0) return { status: "busy", waitMs: Math.max(0, int(s, reply, a)), position: int(s, reply, b), counter: BigInt(int(s, reply, c)) };
  if (code === -1) return { status: "gone" };
  return unexpected(s, reply);
}

/** A multiLock's scripts. */
export const multiScripts = {
  acquireMulti: bind(LUA.acquireMulti, true, parseAcquireMulti),
  releaseMulti: bind(LUA.releaseMulti, false, parseRelease("release-multi")),
  leaveMulti: bind(LUA.leaveMulti, false, parseInt("leave-multi")),
} as const;

/** Each key's lock, queue, tickets, channel, and the tombstone `entry` leaves there when released. */
const freeingKeys = (keys: MultiKeys, entry: string): string[] =>
  keys.each.flatMap((k) => [k.lock, k.queue, k.tickets, k.channel, tombstoneOf(k, entry)]);

/** One attempt on every key at once (a waiter that stops holding lines back hands the free keys on). */
export function acquireCall(keys: MultiKeys, call: AcquireCall, o: CallOptions): ScriptCall<MultiAcquireReply> {
  const { ask, entry } = call;
  return multiScripts.acquireMulti.call({}, {
    owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, join: joinOf(call.reentry), ticketLease: ask.ticketLeaseMs,
    keep: o.keep, grant: o.grant, publish: o.publish,
  }, { keys: freeingKeys(keys, entry) });
}

/** The reply as the store's result: `ref.token` and `leaseToken` are the first key's, `ref.tokens` every key's. */
export function acquireResult(target: MultiTarget, reply: MultiAcquireReply): AcquireResult {
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
export function releaseCall(keys: MultiKeys, hold: string, entry: string, o: CallOptions): ScriptCall<ReleaseReply> {
  return multiScripts.releaseMulti.call({}, { hold, entry, keep: o.keep, window: o.window, grant: o.grant, publish: o.publish }, { keys: freeingKeys(keys, entry) });
}

/** A waiter leaves every queue, and gives back a hold founded for its ticket. */
export function leaveCall(keys: MultiKeys, ticket: string, o: CallOptions): ScriptCall<number> {
  return multiScripts.leaveMulti.call({}, { ticket, keep: o.keep, grant: o.grant, publish: o.publish }, { keys: freeingKeys(keys, ticket) });
}

/** One check per key, as a mutex's: combineStates reads them as one. */
export function checkCalls(keys: MultiKeys, hold: string): ScriptCall<HoldState>[] {
  return keys.each.map((k) => checkCall({ family: "exclusive", keys: k }, hold));
}

/** The hold's state from each key's: held only where every key holds it; taken if any key has another hold. */
export function combineStates(states: readonly HoldState[]): HoldState {
  if (states.every((s) => s === "held")) return "held";
  return states.includes("taken") ? "taken" : "gone";
}
