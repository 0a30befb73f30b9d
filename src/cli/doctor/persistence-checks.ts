/** Checks of whether a server keeps its locks: persistence across a restart, and eviction under memory pressure. */
import type { Check, Durability, Make, Status } from "./check.js";

/**
 * AOF and snapshots, from CONFIG GET; when CONFIG is renamed or denied, from INFO persistence,
 * which says whether AOF is on but not how often it syncs, nor the snapshot schedule.
 */
export function checkPersistence(info: Map<string, string>, config: Map<string, string>, refused: string | undefined, check: Make): { check: Check; durable: Durability } {
  const fromInfo = !config.has("appendonly");
  const aof = config.get("appendonly") ?? (info.get("aof_enabled") === "1" ? "yes" : "no");
  const fsync = config.get("appendfsync");
  const save = config.get("save");
  const source = fromInfo ? ` (from INFO persistence: CONFIG ${refused ?? "unavailable"})` : "";
  const restart = "a restart forgets locks that are still held while their holders keep working";
  const result = (status: Status, detail: string, durable: Durability): { check: Check; durable: Durability } =>
    ({ check: check("persistence", status, detail), durable });
  if (aof === "yes") {
    if (fsync === "always") return result("ok", "appendonly yes, appendfsync always", "yes");
    if (fsync === "everysec") return result("ok", "appendonly yes, appendfsync everysec (a power loss can forget the last second of lock changes)", "no");
    if (fsync === undefined) return result("ok", `appendonly yes${source}; appendfsync unknown`, "unknown");
    return result("warn", `appendonly yes, appendfsync ${fsync}: the OS decides when writes reach the disk, so ${restart}; use everysec or always`, "no");
  }
  const snapshots = save === undefined ? "save unknown" : save === "" ? 'save ""' : `save "${save}"`;
  const advice = "enable appendonly (appendfsync everysec or always), or keep a restarted server out of service for longer than the longest ttl";
  if (save !== undefined && save !== "") return result("warn", `appendonly no, ${snapshots}: snapshots only, so ${restart} since the last snapshot; ${advice}`, "no");
  return result("warn", `appendonly no${source}, ${snapshots}: ${restart}; ${advice}`, "no");
}

/** maxmemory-policy: whether a full server could drop a held lock. */
export function checkEviction(info: Map<string, string>, config: Map<string, string>, check: Make): Check {
  const policy = config.get("maxmemory-policy") ?? info.get("maxmemory_policy") ?? "unknown";
  const maxmemory = Number(config.get("maxmemory") ?? info.get("maxmemory") ?? 0);
  const limit = maxmemory > 0 ? `maxmemory ${maxmemory} bytes` : "no maxmemory limit yet";
  if (policy === "noeviction") return check("eviction", "ok", "maxmemory-policy noeviction (a full server refuses new locks rather than dropping held ones)");
  if (policy.startsWith("allkeys-")) {
    return check("eviction", "warn", `maxmemory-policy ${policy} (${limit}): under memory pressure Redis may evict a held lock and hand it out twice; use noeviction`);
  }
  if (policy.startsWith("volatile-")) {
    // Every surelock key carries a TTL, so volatile-* policies may evict them too.
    return check("eviction", "warn", `maxmemory-policy ${policy} (${limit}): lock keys always carry a TTL, so they are eviction candidates under this policy; use noeviction, or make sure maxmemory is never reached`);
  }
  return check("eviction", "warn", `maxmemory-policy ${policy}: unknown policy; noeviction is the safe choice`);
}
