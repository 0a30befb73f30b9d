/** `surelock inspect KEY`: who holds a key, who waits for it, on every node. */
import { KeySpace } from "../keys.js";
import { perNode, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import {
  isLocked, readLockState, type ElectionHolder, type ElectionState, type Holder, type LatchState, type LockState, type QueuedWaiter,
  type SharedHolder, type SharedState,
} from "./lock-state.js";
import { exitCodeOf, withReachable } from "./one-shot.js";
import { plural, print, printJson, quote } from "./output.js";

export interface InspectOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  readonly key: string;
  readonly json: boolean;
}

/** What one node holds for the key, or (in quorum mode) why it could not be read. */
export type NodeReport = ({ readonly node: string } & LockState) | { readonly node: string; readonly error: string };

/** The `--json` shape: one entry per node (one, unless in quorum mode). */
export interface InspectReport {
  readonly key: string;
  readonly prefix: string;
  /** True when any node holds or queues anything for the key. */
  readonly locked: boolean;
  readonly nodes: readonly NodeReport[];
}

export function inspect(o: InspectOptions): Promise<number> {
  return withReachable(o.addresses, async (reached) => {
    const keys = new KeySpace(o.prefix);
    const outcomes = await perNode(o.addresses, reached, `reading ${quote(o.key)}`, (d) => readLockState(d.client, keys, o.key));
    const nodes = outcomes.map((n): NodeReport => (n.value ? { node: n.node, ...n.value } : { node: n.node, error: n.error ?? "" }));
    const report: InspectReport = {
      key: o.key,
      prefix: o.prefix,
      locked: nodes.some((n) => !("error" in n) && isLocked(n)),
      nodes,
    };
    if (o.json) printJson(report);
    else print(...describe(report));
    return exitCodeOf(outcomes);
  });
}

function describe(report: InspectReport): string[] {
  const lines: string[] = [];
  for (const node of report.nodes) {
    const where = `${quote(report.key)} on ${node.node} (prefix ${quote(report.prefix)})`;
    if ("error" in node) {
      lines.push(`${where}: unknown (${node.error})`);
      continue;
    }
    if (!isLocked(node) && !node.latch) {
      lines.push(`${where}: not locked, nobody waiting`);
      continue;
    }
    lines.push(`${where}:`);
    if (node.mutex) {
      lines.push(`  mutex: ${node.mutex.holder ? held(node.mutex.holder) : "free"}`);
      lines.push(...queue(node.mutex.queue));
    }
    if (node.rw) {
      const writer = node.rw.holders.find((h) => h.mode === "w");
      const readers = node.rw.holders.filter((h) => h.mode === "r");
      lines.push(`  read-write lock, write side: ${writer ? `held by ${writer.owner} (${plural(writer.entries, "entry", "entries")}), fencing token ${writer.fencingToken}, expires in ${formatDuration(writer.expiresInMs)}` : "free"}`);
      lines.push(`  read-write lock, read side: ${plural(readers.length, "reader")}`);
      lines.push(...shared(readers));
      lines.push(...queue(node.rw.queue));
    }
    if (node.semaphore) {
      lines.push(`  semaphore: ${permitsTaken(node.semaphore)}`);
      lines.push(...shared(node.semaphore.holders));
      lines.push(...queue(node.semaphore.queue));
    }
    if (node.election) lines.push(...election(node.election));
    if (node.latch) lines.push(`  countdown latch: ${latch(node.latch)}`);
  }
  return lines;
}

function election(e: ElectionState): string[] {
  const lines = [`  election: ${e.holder ? leader(e.holder) : "no leader"}`];
  if (e.candidates.length === 0) return lines;
  return [
    ...lines,
    `    candidates: ${e.candidates.length} waiting, served head first`,
    ...e.candidates.map((c, i) => `      ${i + 1}. ${c.owner} (ticket ${c.ticket}; dropped in ${formatDuration(c.expiresInMs)} unless its candidate refreshes it)`),
  ];
}

/** A leader in words (shared with `surelock leader`). */
export function leader(l: ElectionHolder): string {
  const value = l.value === null ? "no value" : `value ${quote(l.value)}`;
  if (!l.proclaimed) return `held by ${l.owner}, fencing token ${l.fencingToken}, ${expiry(l.pttlMs)} (not the leader yet: its value is not stored)`;
  return `led by ${l.owner}, ${value}, fencing token ${l.fencingToken}, ${expiry(l.pttlMs)}`;
}

function latch(l: LatchState): string {
  const state = l.left === 0 ? `open (its ${l.count} count downs were made)` : `${l.left} of ${l.count} count downs left`;
  return `${state}, ${expiry(l.pttlMs)} (Redis forgets it then)`;
}

function held(h: Holder): string {
  return `held by ${h.owner} (${plural(h.entries, "entry", "entries")}), fencing token ${h.fencingToken}, ${expiry(h.pttlMs)}`;
}

function queue(tickets: readonly QueuedWaiter[]): string[] {
  if (tickets.length === 0) return [];
  return [
    `    queue: ${plural(tickets.length, "waiter")}, served head first`,
    ...tickets.map((t, i) => `      ${i + 1}. ${t.owner}${wants(t)} (ticket ${t.ticket}; dropped in ${formatDuration(t.expiresInMs)} unless its waiter refreshes it)`),
  ];
}

function wants(t: QueuedWaiter): string {
  if (t.mode === "r") return ", to read";
  if (t.mode === "w") return ", to write";
  if (t.mode === "s") return `, for ${plural(t.permits, "permit")}`;
  // A multiLock's waiter: it stands in the queue of each of its keys, and takes them all at once;
  // while one of them is held ('n') it lets the others pass.
  if (t.mode === "m") return ", with other keys (a multiLock)";
  if (t.mode === "n") return ", with other keys (a multiLock waiting for a holder: others pass it)";
  return "";
}

function permitsTaken(s: SharedState): string {
  const taken = s.holders.reduce((sum, h) => sum + h.permits, 0);
  return `${taken}${s.limit === null ? "" : ` of ${s.limit}`} permits taken`;
}

function shared(holders: readonly SharedHolder[]): string[] {
  return holders.map((h) => `    ${h.owner}${h.mode === "s" && h.permits > 1 ? ` (${h.permits} permits)` : ""}, fencing token ${h.fencingToken}, expires in ${formatDuration(h.expiresInMs)}`);
}

/** A PTTL in words. */
export function expiry(pttlMs: number): string {
  if (pttlMs === -1) return "no expiry (not written by surelock?)";
  if (pttlMs < 0) return "gone";
  return `expires in ${formatDuration(pttlMs)}`;
}
