/**
 * The protocol of the primitives beside the locks: an election's proclaim and read-leader, a
 * latch's count-down and read-latch — their calls, built from the store's requests, and their replies.
 */
import { bind, LUA, type ScriptCall } from "../scripts/index.js";
import type { CountDownRequest, HoldState, LatchReply, LatchRequest, LeaderReply, ProclaimRequest } from "../store/types.js";
import { holdState, type CallOptions } from "./holds.js";
import { coded, int, text, unexpected } from "./reply.js";

/** Reads a read-leader reply: null when nobody leads on this node. */
export function parseLeader(reply: unknown): LeaderReply | null {
  if (!Array.isArray(reply)) unexpected("read-leader", reply);
  if (reply.length === 0) return null;
  const [owner, hold, token, pttl, proclaimed, value, seq, keptSeq, keptHas, keptValue] = reply as unknown[];
  const how = int("read-leader", reply, proclaimed);
  const ks = how === 0 ? 0 : int("read-leader", reply, keptSeq);
  return {
    owner: text("read-leader", reply, owner),
    hold: text("read-leader", reply, hold),
    token: BigInt(text("read-leader", reply, token)),
    pttlMs: int("read-leader", reply, pttl),
    proclaimed: how !== 0,
    value: how === 1 ? text("read-leader", reply, value) : null,
    // Not yet proclaimed: no number (six elements).
    seq: how === 0 ? 0 : int("read-leader", reply, seq),
    ...(ks > 0 ? { kept: { seq: ks, value: int("read-leader", reply, keptHas) === 1 ? text("read-leader", reply, keptValue) : null } } : {}),
  };
}

/** Reads a count-down or read-latch reply. */
export function parseLatch(script: string): (reply: unknown) => LatchReply {
  return (reply) => {
    const [code, n] = coded(script, reply);
    const value = int(script, reply, n);
    const ids = code === 1 || code === 2 ? (reply as unknown[]).slice(2).map((id) => text(script, reply, id)) : [];
    if (code === 1) return { status: script === "count-down" ? "counted" : "unchanged", left: value, ids };
    if (code === 2) return { status: "unchanged", left: value, ids };
    if (code === -2) return { status: "conflict", count: value };
    return unexpected(script, reply);
  };
}

/** The scripts of elections and latches. */
export const coordinationScripts = {
  proclaim: bind(LUA.proclaim, false, (reply) => holdState("proclaim", reply)),
  readLeader: bind(LUA.readLeader, false, parseLeader),
  countDown: bind(LUA.countDown, true, parseLatch("count-down")),
  readLatch: bind(LUA.readLatch, false, parseLatch("read-latch")),
} as const;

/** Stores a leader's value beside its hold and announces it; the hold's state. */
export function proclaimCall(req: ProclaimRequest, o: CallOptions): ScriptCall<HoldState> {
  return coordinationScripts.proclaim.call(
    { lock: req.keys.lock, channel: req.keys.channel },
    {
      hold: req.hold, token: req.token.toString(), value: req.value ?? "", has: req.value === null ? "0" : "1", publish: o.publish, seq: String(req.seq),
      // On one node, every proclaim reached every majority there is.
      kept: req.kept === false ? "0" : "1",
    },
  );
}

/** Who holds an election's lock, and what it proclaimed. */
export function readLeaderCall(lock: string): ScriptCall<LeaderReply | null> {
  return coordinationScripts.readLeader.call({ lock }, {});
}

/** Quorum mode: a latch lists the ids it counted (an extra argument), so that a read over nodes counts distinct ones. */
const latchIds = (o: CallOptions): { args: string[] } | undefined => (o.countsIds ? { args: ["1"] } : undefined);

/** Counts one id down. */
export function countDownCall(req: CountDownRequest, o: CallOptions): ScriptCall<LatchReply> {
  return coordinationScripts.countDown.call(
    { latch: req.keys.state, channel: req.keys.channel },
    { id: req.id, count: req.count, ttl: req.ttlMs, publish: o.publish },
    latchIds(o),
  );
}

/** What is left of a latch. */
export function readLatchCall(req: LatchRequest, o: CallOptions): ScriptCall<LatchReply> {
  return coordinationScripts.readLatch.call({ latch: req.keys.state }, { count: req.count }, latchIds(o));
}
