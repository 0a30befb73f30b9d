/**
 * The replies of the scripts beside the locks: the fencing guard's write, an election's leader and
 * a latch's count.
 */
import { coded, int, text, unexpected } from "./reply.js";

/** Outcome of a guarded write. */
export type GuardReply =
  | { readonly status: "written"; readonly reply: unknown }
  | { readonly status: "refused"; readonly highestToken: bigint }
  | { readonly status: "replayed" };

/** Reads a guard-write reply. */
export function parseGuard(reply: unknown): GuardReply {
  const [code, value] = coded("guard-write", reply);
  if (code === 1) return { status: "written", reply: value };
  if (code === 0) return { status: "refused", highestToken: BigInt(text("guard-write", reply, value)) };
  if (code === 2) return { status: "replayed" };
  return unexpected("guard-write", reply);
}

/** Who holds an election's lock on one node, and what it proclaimed. */
export interface LeaderReply {
  readonly owner: string;
  readonly hold: string;
  /** The token the leader proclaimed (its lease's), or this node's own token for the hold until then. */
  readonly token: bigint;
  readonly pttlMs: number;
  readonly proclaimed: boolean;
  /** The proclaimed value; null when none was proclaimed (or not yet). */
  readonly value: string | null;
  /** Which of the hold's proclaims this node shows (they are numbered 1, 2, ... by its leader); 0 before any. */
  readonly seq: number;
  /** The hold's newest *kept* proclaim on this node (proclaim.lua: known to have reached a majority); absent before one is. */
  readonly kept?: { readonly seq: number; readonly value: string | null };
}

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

/** A latch's count on one node; `ids`, when asked for (quorum mode), the count downs it has counted. */
export type LatchReply =
  | { readonly status: "counted" | "unchanged"; readonly left: number; readonly ids: readonly string[] }
  | { readonly status: "conflict"; readonly count: number };

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
