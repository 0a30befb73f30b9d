/** Checks across the `--redis` URLs of quorum mode: the node count, independent servers, their clocks, Redlock's restart rule. */
import { atLeast, clockSpread, type ClockOffset } from "../clock-offset.js";
import { formatDuration } from "../duration.js";
import { plural } from "../output.js";
import type { Check, Durability, Status } from "./check.js";
import { CLOCK_WARN_MS, formatOffset } from "./clock-checks.js";

/** Across the `--redis` URLs of quorum mode: enough nodes, and no node counted twice. */
export function checkQuorum(n: number, runIds: ReadonlyMap<string, string>): Check[] {
  const checks: Check[] = [];
  const needed = Math.floor(n / 2) + 1;
  const tolerates = n - needed;
  const status: Status = n >= 3 && n % 2 === 1 ? "ok" : "warn";
  const why = n < 3 ? ": with fewer than 3 nodes, one failure stops every lock" : n % 2 === 0 ? `: an even count tolerates no more failures than ${n - 1} nodes would` : "";
  checks.push({ node: "quorum", check: "nodes", status, detail: `${n} primaries, ${needed} must agree, ${plural(tolerates, "failure")} tolerated${why}` });
  const byRun = new Map<string, string[]>();
  for (const [node, runId] of runIds) byRun.set(runId, [...(byRun.get(runId) ?? []), node]);
  for (const nodes of byRun.values()) {
    if (nodes.length > 1) {
      checks.push({ node: "quorum", check: "independence", status: "fail", detail: `${nodes.join(" and ")} are the same server: quorum mode needs independent primaries` });
    }
  }
  return checks;
}

/**
 * Quorum: the nodes' clocks against each other (this host's cancels out). A node restarted
 * without its data restarts its counters at its clock; tokens stay increasing only while every
 * node is within half the restart delay, and half the counter retention, of the others: nodes
 * further apart than that fail.
 */
export function checkQuorumClocks(clocks: readonly { node: string; offset: ClockOffset }[], counterRetentionMs: number): Check[] {
  const spread = clockSpread(clocks);
  if (!spread) return [];
  const what = `clocks of ${clocks.length} nodes within ${formatOffset(spread.spreadMs)} of each other (± ${formatOffset(spread.boundMs)})`;
  const rule = "a restarted node restarts its fencing counters at its own clock, so tokens keep growing only while every node's clock is " +
    `within half the restart delay, and half the counter retention (${formatDuration(counterRetentionMs)}), of the others`;
  const least = atLeast(spread.spreadMs, spread.boundMs);
  if (least > counterRetentionMs / 2) {
    return [{ node: "quorum", check: "clocks", status: "fail", detail: `${what}: ${spread.ahead} is ahead of ${spread.behind} by more than half the counter retention; ${rule}: synchronise them (NTP)` }];
  }
  if (least > CLOCK_WARN_MS) {
    return [{ node: "quorum", check: "clocks", status: "warn", detail: `${what}: ${spread.ahead} is ahead of ${spread.behind}, so at least one is not synchronised; ${rule}: synchronise them (NTP), and keep the restart delay above twice the spread` }];
  }
  return [{ node: "quorum", check: "clocks", status: "ok", detail: what }];
}

/**
 * Quorum: Redlock's restart rule. A node that comes back without every lock change it made
 * (no AOF, or an fsync that can lose the last writes) may grant a lock that a majority still
 * holds elsewhere, unless it stays out of service for longer than the longest lock ttl.
 */
export function checkRestartDelay(durability: ReadonlyMap<string, Durability>): Check[] {
  if (durability.size < 2) return [];
  const forgetful = [...durability].filter(([, d]) => d === "no").map(([node]) => node);
  const unknown = [...durability].filter(([, d]) => d === "unknown").map(([node]) => node);
  const rule = "Redlock's restart rule: a node that restarts without every lock change it made must stay out of service " +
    "for longer than the longest lock ttl (plus the clocks' spread), or it may grant a lock that a majority still holds " +
    "through the other nodes; alternatively run every node with appendonly yes and appendfsync always";
  const found = [
    ...(forgetful.length > 0 ? [`${forgetful.join(", ")} may forget recent lock changes on a restart (no appendfsync always)`] : []),
    ...(unknown.length > 0 ? [`the appendfsync of ${unknown.join(", ")} is unknown (CONFIG unavailable)`] : []),
  ];
  if (found.length > 0) return [{ node: "quorum", check: "restart-delay", status: "warn", detail: `${found.join("; ")}: ${rule}` }];
  return [{ node: "quorum", check: "restart-delay", status: "ok", detail: "every node syncs each change to disk before it answers (appendfsync always): a restarted node remembers its locks" }];
}
