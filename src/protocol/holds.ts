/**
 * What every lock family's protocol shares: how an attempt's way in (Reentry) is written for the
 * scripts and what its give-back sends, the options every freeing call carries, the replies of
 * acquire and release (a mutex's, a shared lock's and a multiLock's are laid out alike), the hold
 * and ticket states that check and keepalive report, and the scripts that read or fence any one
 * lock (check, raise-fence).
 */
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { AcquireCall, AcquireResult, Grant, HoldState, Reentry, SingleTarget, TicketState } from "../store/types.js";
import { coded, int, parseInt, text, unexpected } from "./reply.js";

/** What the calls of one deployment carry besides keys and the request: fixed for its store. */
export interface CallOptions {
  /** How long a freed lock's counter outlives its last hold, ms. */
  readonly keep: number;
  /** How long a released entry's tombstone answers replays, ms. */
  readonly window: number;
  /** "1": a release grants the lock to the queue's head itself (single-node mode). */
  readonly grant: "0" | "1";
  readonly publish: "PUBLISH" | "SPUBLISH";
  /** Quorum mode: a mutex's waiters stand in a line ordered by `Ask.order` (lib/queue.lua). */
  readonly ordered: boolean;
  /** Quorum mode: a latch lists the ids it counted, so that a read over nodes counts distinct ones. */
  readonly countsIds: boolean;
}

/**
 * The acquire scripts' `join` argument: '' fresh, '*' a join by owner (the script finds the
 * owner's hold), else the id of the hold a join enters or a nested read is let in under (a shared
 * lock's script tells the two apart by the mode: a nested read is the only read that names one).
 */
export function joinOf(reentry: Reentry): string {
  switch (reentry.kind) {
    case "fresh": return "";
    case "owner": return "*";
    case "join": return reentry.hold;
    case "nested": return reentry.via;
  }
}

/**
 * What giving back an attempt sends, in order: `leave`, whether it leaves the line (which also
 * gives back a hold founded for its ticket, whose id is the ticket's); `release`, the hold whose
 * entry `call.entry` it releases, when the attempt may have added one to a hold ('*', a join by
 * owner: release.lua finds the hold by the entry; a nested read's own hold, whose id is its entry's).
 */
export function giveBackOf(call: AcquireCall): { readonly leave: boolean; readonly release: string | undefined } {
  const r = call.reentry;
  switch (r.kind) {
    case "fresh": return { leave: true, release: undefined };
    case "owner": return { leave: true, release: "*" };
    case "join": return { leave: false, release: r.hold };
    case "nested": return { leave: false, release: call.ask.hold };
  }
}

/** What an acquire attempt got. */
export type AcquireReply =
  /**
   * `token` is the hold's own on this node; `leaseToken` the one its quorum chose (recorded by
   * raise-fence), or the same.
   */
  | { readonly status: "founded" | "entered"; readonly token: bigint; readonly hold: string; readonly pttlMs: number; readonly leaseToken: bigint }
  /** `counter`: the lock's fencing counter when the reply was made (a grant later has a larger token). */
  | { readonly status: "busy"; readonly waitMs: number; readonly position: number; readonly counter: bigint }
  | { readonly status: "gone" }
  | { readonly status: "conflict"; readonly limit: number };

/** An acquire or acquire-shared reply as the store's result. */
export function acquireResult(target: SingleTarget, reply: AcquireReply): AcquireResult {
  if (reply.status === "busy" || reply.status === "gone" || reply.status === "conflict") return reply;
  return { status: reply.status, ref: { target, hold: reply.hold, token: reply.token }, pttlMs: reply.pttlMs, leaseToken: reply.leaseToken };
}

/** Reads an acquire or acquire-shared reply. */
export function parseAcquire(script: string): (reply: unknown) => AcquireReply {
  return (reply) => {
    const [code, a, b, c, d] = coded(script, reply);
    if (code === 1 || code === 2) {
      return {
        status: code === 1 ? "founded" : "entered",
        token: BigInt(int(script, reply, a)),
        hold: text(script, reply, b),
        pttlMs: int(script, reply, c),
        leaseToken: BigInt(int(script, reply, d)),
      };
    }
    // A PTTL of -1/-2 (no expiry / no key) only means "try again soon".
    if (code === 0) {
      return { status: "busy", waitMs: Math.max(0, int(script, reply, a)), position: int(script, reply, b), counter: BigInt(int(script, reply, c)) };
    }
    if (code === -1) return { status: "gone" };
    if (code === -2) return { status: "conflict", limit: int(script, reply, a) };
    return unexpected(script, reply);
  };
}

/** What a release did. */
export type ReleaseReply =
  | { readonly status: "held"; readonly entries: number }
  | { readonly status: "freed"; readonly grants: readonly Grant[] }
  | { readonly status: "released" }
  | { readonly status: "gone" }
  | { readonly status: "taken" };

/** Reads the reply of a release, release-shared or release-multi. */
export function parseRelease(script: string): (reply: unknown) => ReleaseReply {
  return (reply) => {
    const [code, ...rest] = coded(script, reply);
    switch (code) {
      case 2: return { status: "held", entries: int(script, reply, rest[0]) };
      case 3: return { status: "released" };
      case 0: return { status: "gone" };
      case -1: return { status: "taken" };
      case 1: {
        if (rest.length % 3 !== 0) unexpected(script, reply);
        const grants: Grant[] = [];
        for (let i = 0; i < rest.length; i += 3) {
          grants.push({
            ticket: text(script, reply, rest[i]),
            token: BigInt(int(script, reply, rest[i + 1])),
            pttlMs: int(script, reply, rest[i + 2]),
          });
        }
        return { status: "freed", grants };
      }
      default: return unexpected(script, reply);
    }
  };
}

/** Reads a hold check (check, proclaim, a keepalive item): 1 held, 0 gone, -1 taken. */
export function holdState(script: string, reply: unknown): HoldState {
  if (reply === 1) return "held";
  if (reply === 0) return "gone";
  if (reply === -1) return "taken";
  return unexpected(script, reply);
}

/** Reads a keepalive item for a ticket. */
export function ticketState(reply: unknown): TicketState {
  const [code, a, b] = coded("keepalive", reply);
  if (code === 1) return { status: "granted", token: BigInt(int("keepalive", reply, a)), pttlMs: int("keepalive", reply, b) };
  if (code === 2) return { status: "turn" };
  if (code === 3) return { status: "done" };
  if (code === 0) return { status: "queued", position: int("keepalive", reply, a), counter: BigInt(int("keepalive", reply, b)) };
  return unexpected("keepalive", reply);
}

/** The scripts that read or fence one lock of any family. */
export const holdScripts = {
  check: bind(LUA.check, false, (reply) => holdState("check", reply)),
  raiseFence: bind(LUA.raiseFence, true, parseInt("raise-fence")),
} as const;

/** Whether `hold` holds `target`'s lock (a mutex's hash, a shared lock's holders). */
export function checkCall(target: SingleTarget, hold: string): ScriptCall<HoldState> {
  if (target.family === "exclusive") return holdScripts.check.call({ key: target.keys.lock }, { kind: "x", hold });
  return holdScripts.check.call({ key: target.keys.holders }, { kind: "s", hold });
}

/** Raises `target`'s counter to the token a quorum chose for `hold`, recorded beside the hold. */
export function raiseCall(target: SingleTarget, chosen: bigint, hold: string, o: CallOptions): ScriptCall<number> {
  const exclusive = target.family === "exclusive";
  const hash = exclusive ? target.keys.lock : target.keys.state;
  return holdScripts.raiseFence.call({ hash }, { chosen: chosen.toString(), keep: o.keep, kind: exclusive ? "x" : "s", hold });
}
