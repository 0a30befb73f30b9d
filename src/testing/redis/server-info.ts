/** The text of INFO: the sections Redis prints, filled with what MemoryRedis knows of itself. */

/** What the server reports about itself at the moment INFO runs. */
export interface InfoFacts {
  readonly version: string;
  readonly runId: string;
  /** Microseconds since the epoch, now. */
  readonly timeUs: number;
  readonly uptimeS: number;
  readonly clients: number;
  readonly keys: number;
  readonly commandsProcessed: number;
  readonly replicas: number;
  readonly config: ReadonlyMap<string, string>;
}

/** INFO's reply for `sections` (none, "all", "default" or "everything": every section). */
export function infoText(sections: readonly string[], facts: InfoFacts): string {
  const all = sections.length === 0 || sections.some((s) => ["all", "default", "everything"].includes(s));
  const want = (s: string): boolean => all || sections.includes(s);
  const { uptimeS, keys, config } = facts;
  const usedMemory = 900_000 + keys * 100;
  const parts: [string, Record<string, string | number>][] = [
    ["Server", {
      redis_version: facts.version, redis_mode: "standalone", os: "MemoryRedis (in-process)", arch_bits: 64,
      process_id: process.pid, run_id: facts.runId,
      tcp_port: 0, server_time_usec: facts.timeUs, uptime_in_seconds: uptimeS, uptime_in_days: Math.floor(uptimeS / 86400),
      hz: 10, executable: "memory-redis",
    }],
    ["Clients", { connected_clients: facts.clients, blocked_clients: 0 }],
    ["Memory", {
      used_memory: usedMemory, used_memory_human: `${(usedMemory / 1048576).toFixed(2)}M`,
      maxmemory: config.get("maxmemory") ?? "0", maxmemory_policy: config.get("maxmemory-policy") ?? "noeviction",
    }],
    ["Persistence", { loading: 0, rdb_changes_since_last_save: 0, aof_enabled: config.get("appendonly") === "yes" ? 1 : 0 }],
    ["Stats", { total_commands_processed: facts.commandsProcessed, expired_keys: 0, evicted_keys: 0 }],
    ["Replication", { role: "master", connected_slaves: facts.replicas, master_repl_offset: 0 }],
    ["Keyspace", keys > 0 ? { db0: `keys=${keys},expires=0,avg_ttl=0` } : {}],
  ];
  return parts
    .filter(([title]) => want(title.toLowerCase()))
    .map(([title, fields]) => `# ${title}\r\n${Object.entries(fields).map(([k, v]) => `${k}:${v}\r\n`).join("")}`)
    .join("\r\n");
}
