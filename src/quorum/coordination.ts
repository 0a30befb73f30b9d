/**
 * How a quorum decides what the primitives beside the locks read and write (an election's leader
 * and value, a latch's count), from every node's answer. The rule is every quorum operation's: a
 * fact counts once a majority of nodes states it, and any two majorities share a node.
 */
import { QuorumError } from "../errors.js";
import type { LatchReply, LeaderReply } from "../store/types.js";
import { majorityOf, type Vote } from "./votes.js";

/** The nodes' values if a majority answered, else QuorumError naming every node. */
export function answered<R>(name: string, operation: string, votes: readonly Vote<R>[], names: readonly string[]): R[] {
  const values = votes.flatMap((v) => (v.ok ? [v.value] : []));
  if (values.length >= majorityOf(votes.length)) return values;
  throw new QuorumError(name, operation, votes.map((v) => {
    const node = names[v.node] ?? String(v.node);
    return v.ok ? { node, ok: true } : { node, ok: false, error: v.error };
  }));
}

/**
 * The leader from every node's reading: the hold that holds the lock on a majority of the nodes,
 * with the value of the newest proclaim any of them shows *kept* (proclaim.lua: marked once a
 * majority stored it), and the life a majority still gives it (until the majority-th latest
 * expiry). A proclaim that reached fewer than a majority is never kept, so never named; one that
 * resolved is kept on a majority, which every majority of readings shares a node with, and a node
 * keeps the newest kept one. Null when no hold is on a majority, or none of its proclaims is kept.
 */
export function decideLeader(readings: readonly (LeaderReply | null)[], n: number): LeaderReply | null {
  const byHold = new Map<string, LeaderReply[]>();
  for (const r of readings) {
    if (r) byHold.set(r.hold, [...(byHold.get(r.hold) ?? []), r]);
  }
  const m = majorityOf(n);
  for (const group of byHold.values()) {
    if (group.length < m) continue;
    const newest = group.reduce<LeaderReply | undefined>((best, r) => (r.kept && (!best?.kept || r.kept.seq > best.kept.seq) ? r : best), undefined);
    if (!newest?.kept) continue;
    const { kept, ...reading } = newest;
    const pttls = group.map((r) => r.pttlMs).sort((a, b) => b - a);
    return { ...reading, value: kept.value, seq: kept.seq, pttlMs: Math.max(0, pttls[m - 1] ?? 0) };
  }
  return null;
}

/**
 * What is left of a latch. A count down is an id added on the nodes it reached, and one that
 * resolved reached a majority, which every majority of answers shares a node with: the latch is
 * open once the answers (a majority) have `count` distinct ids between them, or a node counted
 * them all itself (it is at 0). Two count downs acknowledged by different majorities (nodes at 1,
 * 0, 1) open it; "a majority at 0" would not. A node that has the latch with another count
 * answers for all: a conflict.
 */
export function decideLatch(count: number, replies: readonly LatchReply[]): LatchReply {
  const seen = new Set<string>();
  let least = count;
  let counted = false;
  for (const r of replies) {
    if (r.status === "conflict") return r;
    least = Math.min(least, r.left);
    counted ||= r.status === "counted";
    for (const id of r.ids) seen.add(id);
  }
  const left = least === 0 ? 0 : Math.max(0, count - seen.size);
  return { status: counted ? "counted" : "unchanged", left, ids: [...seen] };
}
