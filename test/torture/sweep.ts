/**
 * After the nemesis healed and every worker closed: wait (polling Redis, which has no event to
 * wait on) until every lock is free and every queue drained, then check that no surelock key
 * lives without a TTL, and read the guarded logs and counters for the resource checkers.
 * Reads go to the servers directly, not through the proxies. Written against both key layouts:
 * the old one (`queue-deadlines` zset, `shared` zset) and the new one (`tickets` hash, `holders`
 * zset with tombstones, a `lock` hash that outlives its holds).
 */
import type { RedisServer, RespReply } from "../helpers/redis-topology.js";
import type { CounterFinals, GuardLogs } from "./checkers/resources.js";
import type { Sweep } from "./checkers/liveness.js";
import { onOwner, type Deployment } from "./deployment.js";

const PREFIX = "surelock";

async function serverMs(server: RedisServer): Promise<number> {
  const [s, us] = (await server.commandWithTimeout(3_000, "TIME")) as string[];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** What is still busy on one server: held locks, live shared holders, live queue tickets. */
async function busyOn(server: RedisServer): Promise<{ held: string[]; tickets: string[] }> {
  const keys = (await server.commandWithTimeout(3_000, "KEYS", `${PREFIX}:*`)) as string[];
  const now = await serverMs(server);
  const held: string[] = [];
  const tickets: string[] = [];
  for (const key of keys) {
    if (key.endsWith(":lock")) {
      if ((await server.commandWithTimeout(3_000, "HEXISTS", key, "o")) === 1) held.push(`${key} (holder ${String(await server.command("HGET", key, "o"))})`);
    } else if (key.endsWith(":shared") || key.endsWith(":holders")) {
      const live = (await server.commandWithTimeout(3_000, "ZRANGEBYSCORE", key, `(${now}`, "+inf")) as string[];
      if (live.length > 0) held.push(`${key} (${live.length} live holder(s))`);
    } else if (key.endsWith(":queue")) {
      const base = key.slice(0, -":queue".length);
      for (const ticket of (await server.commandWithTimeout(3_000, "LRANGE", key, 0, -1)) as string[]) {
        const deadline = await ticketDeadline(server, base, ticket);
        if (deadline !== undefined && deadline > now) tickets.push(`${key} ${ticket} (deadline in ${deadline - now} ms)`);
      }
    }
  }
  return { held, tickets };
}

async function ticketDeadline(server: RedisServer, base: string, ticket: string): Promise<number | undefined> {
  const old = await server.commandWithTimeout(3_000, "ZSCORE", `${base}:queue-deadlines`, ticket);
  if (old !== null) return Number(old);
  const fresh = await server.commandWithTimeout(3_000, "HGET", `${base}:tickets`, ticket);
  return fresh === null ? undefined : Number(String(fresh).split("|")[0]);
}

async function keysWithoutTtl(servers: readonly RedisServer[]): Promise<string[]> {
  const out: string[] = [];
  for (const server of servers) {
    for (const key of (await server.commandWithTimeout(3_000, "KEYS", `${PREFIX}:*`)) as string[]) {
      if ((await server.commandWithTimeout(3_000, "PTTL", key)) === -1) out.push(`${key} on port ${server.port}`);
    }
  }
  return out;
}

/**
 * Waits until nothing is busy (every `pollMs`), at most `deadlineMs`; then the TTL check. A
 * server that cannot be read makes the sweep fail, with the reason.
 */
export async function sweep(deployment: Deployment, deadlineMs: number, pollMs = 100): Promise<Sweep> {
  const started = performance.now();
  let busy: { held: string[]; tickets: string[] } = { held: [], tickets: [] };
  try {
    for (;;) {
      const servers = await deployment.lockServers();
      const parts = await Promise.all(servers.map(busyOn));
      busy = { held: parts.flatMap((p) => p.held), tickets: parts.flatMap((p) => p.tickets) };
      if (busy.held.length === 0 && busy.tickets.length === 0) break;
      if (performance.now() - started > deadlineMs) break;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    const drained = busy.held.length === 0 && busy.tickets.length === 0;
    return {
      drainedAfterMs: drained ? Math.round(performance.now() - started) : null,
      deadlineMs,
      stillBusy: busy.held,
      orphanTickets: busy.tickets,
      noTtl: await keysWithoutTtl(await deployment.lockServers()),
    };
  } catch (error) {
    return { drainedAfterMs: null, deadlineMs, stillBusy: busy.held, orphanTickets: busy.tickets, noTtl: [], error: (error as Error).message };
  }
}

/** The guarded logs and counters the history mentions, as they are in Redis now. */
export async function readResources(
  deployment: Deployment, resources: Iterable<[resource: string, logKey: string]>, counterKeys: Iterable<string>,
): Promise<{ logs: GuardLogs; counters: CounterFinals }> {
  const servers = await deployment.dataServers();
  const logs = new Map<string, readonly string[] | null>();
  const counters = new Map<string, number | null>();
  const read = async (...args: (string | number)[]): Promise<RespReply | undefined> =>
    onOwner(servers, ...args).catch(() => undefined);
  for (const [resource, logKey] of resources) {
    const log = await read("LRANGE", logKey, 0, -1);
    logs.set(resource, Array.isArray(log) ? log.map(String) : null);
  }
  for (const key of counterKeys) {
    const value = await read("GET", key);
    counters.set(key, value === undefined ? null : Number(value ?? 0));
  }
  return { logs, counters };
}
