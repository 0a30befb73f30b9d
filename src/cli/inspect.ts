/** `surelock inspect KEY`: who holds a key, who waits for it, on every node. */
import { KeySpace } from "../keys.js";
import { CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, perNode, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import { ExitCode } from "./exit-codes.js";
import { isLocked, readLockState, type Holder, type LockState, type QueuedWaiter, type SharedHolder } from "./lock-state.js";
import { note, plural, print, printJson, quote } from "./output.js";

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

export async function inspect(o: InspectOptions): Promise<number> {
  const reached = await connectReachable(o.addresses, { reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  try {
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
    const failed = outcomes.filter((n) => n.error !== undefined);
    for (const n of failed) note(n.error as string);
    return failed.length > 0 ? ExitCode.unavailable : ExitCode.ok;
  } finally {
    await disconnectAll(reached.deployments);
  }
}

function describe(report: InspectReport): string[] {
  const lines: string[] = [];
  for (const node of report.nodes) {
    const where = `${quote(report.key)} on ${node.node} (prefix ${quote(report.prefix)})`;
    if ("error" in node) {
      lines.push(`${where}: unknown (${node.error})`);
      continue;
    }
    if (!isLocked(node)) {
      lines.push(`${where}: not locked, nobody waiting`);
      continue;
    }
    lines.push(`${where}:`);
    if (node.mutex) {
      lines.push(`  mutex: ${node.mutex.holder ? held(node.mutex.holder) : "free"}`);
      lines.push(...queue(node.mutex.queue));
    }
    if (node.rw) {
      lines.push(`  read-write lock, write side: ${node.rw.writer ? held(node.rw.writer) : "free"}`);
      lines.push(`  read-write lock, read side: ${plural(node.rw.readers.length, "reader")}`);
      lines.push(...shared(node.rw.readers));
      if (node.rw.writerWaiting) {
        lines.push(`  a writer (${node.rw.writerWaiting.owner}) is waiting: new readers are held back for ${formatDuration(node.rw.writerWaiting.pttlMs)}`);
      }
      lines.push(...queue(node.rw.queue));
    }
    if (node.semaphore) {
      lines.push(`  semaphore: ${plural(node.semaphore.holders.length, "permit")} taken`);
      lines.push(...shared(node.semaphore.holders));
      lines.push(...queue(node.semaphore.queue));
    }
  }
  return lines;
}

function held(h: Holder): string {
  return `held by ${h.owner} (${plural(h.entries, "entry", "entries")}), fencing token ${h.fencingToken}, ${expiry(h.pttlMs)}`;
}

function queue(tickets: readonly QueuedWaiter[]): string[] {
  if (tickets.length === 0) return [];
  return [
    `    queue: ${plural(tickets.length, "ticket")}, served head first`,
    ...tickets.map((t, i) => `      ${i + 1}. ${t.ticket} (dropped in ${formatDuration(t.expiresInMs)} unless its waiter refreshes it)`),
  ];
}

function shared(holders: readonly SharedHolder[]): string[] {
  return holders.map((h) => `    ${h.owner} (member ${h.member}), expires in ${formatDuration(h.expiresInMs)}`);
}

/** A PTTL in words. */
export function expiry(pttlMs: number): string {
  if (pttlMs === -1) return "no expiry (not written by surelock?)";
  if (pttlMs < 0) return "gone";
  return `expires in ${formatDuration(pttlMs)}`;
}
