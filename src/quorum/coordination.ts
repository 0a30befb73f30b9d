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
 * The leader from every node's reading: the hold that holds the lock on a majority of the nodes
 * and proclaimed itself on at least one of them (a proclaim that succeeded reached a majority, and
 * any two majorities share a node), with the value of its newest proclaim any of them shows (the
 * nodes the last successful proclaim missed still show an older one), and the life a majority
 * still gives it: until the majority-th latest expiry. Null when there is none.
 */
export function decideLeader(readings: readonly (LeaderReply | null)[], n: number): LeaderReply | null {
  const byHold = new Map<string, LeaderReply[]>();
  for (const r of readings) {
    if (r) byHold.set(r.hold, [...(byHold.get(r.hold) ?? []), r]);
  }
  const m = majorityOf(n);
  for (const group of byHold.values()) {
    const proclaimed = group.reduce<LeaderReply | undefined>((best, r) => (r.proclaimed && (!best || r.seq > best.seq) ? r : best), undefined);
    if (group.length < m || !proclaimed) continue;
    const pttls = group.map((r) => r.pttlMs).sort((a, b) => b - a);
    return { ...proclaimed, pttlMs: Math.max(0, pttls[m - 1] ?? 0) };
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
