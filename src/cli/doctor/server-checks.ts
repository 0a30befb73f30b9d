/** Checks of one server as surelock talks to it: version, scripting, role and replicas, latency, and a Cluster's state. */
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import type { Deployment } from "../connection.js";
import { plural } from "../output.js";
import { messageOf, type Check, type Make } from "./check.js";
import { parseInfo } from "./server-settings.js";

/** Median round trips above these are worth a warning / make locks impractical. */
const LATENCY_WARN_MS = 50;
const LATENCY_FAIL_MS = 1_000;
const PINGS = 5;

/** The server's version: what surelock's scripts and a Cluster's wake-ups need. */
export function checkVersion(info: Map<string, string>, inCluster: boolean, check: Make): Check {
  const text = info.get("redis_version") ?? "";
  const [major = 0, minor = 0, patch = 0] = text.split(".").map(Number);
  const v = major * 10_000 + minor * 100 + patch;
  const server = `${info.get("server_name") === "valkey" ? "Valkey (Redis-compatible)" : "Redis"} ${text}`;
  if (v < 60_006) return check("version", "fail", `${server}: surelock's scripts need at least 6.0.6 (LPOS for fair locks); 6.2 or later is recommended`);
  if (inCluster && v < 70_000) return check("version", "fail", `${server}: a Cluster needs Redis 7 for sharded pub/sub (SPUBLISH), which carries surelock's wake-ups`);
  if (v < 60_200) return check("version", "warn", `${server}: works, but 6.2 or later is recommended (7 for a Cluster)`);
  return check("version", "ok", server);
}

/** EVAL is allowed and works (every lock operation is a script). */
export async function checkScripting(server: Redis, check: Make): Promise<Check> {
  try {
    const reply = await server.eval("return redis.call('TIME')", 0);
    if (!Array.isArray(reply)) return check("scripting", "fail", "EVAL answered unexpectedly; surelock runs every operation as a Lua script");
    return check("scripting", "ok", "EVAL works (every lock operation is one Lua script)");
  } catch (error) {
    return check("scripting", "fail", `EVAL failed (${messageOf(error)}): surelock runs every operation as a Lua script; allow EVAL/EVALSHA (ACL, rename-command)`);
  }
}

/** A primary, and how far its replicas can be trusted with a just-taken lock. */
export function checkRole(info: Map<string, string>, config: Map<string, string>, check: Make): Check {
  const role = info.get("role");
  if (role === "slave" || role === "replica") {
    const primary = `${info.get("master_host") ?? "?"}:${info.get("master_port") ?? "?"}`;
    return check("replication", "fail", `this is a read-only replica of ${primary}: locks must be taken on the primary`);
  }
  const replicas = Number(info.get("connected_slaves") ?? 0);
  if (replicas === 0) return check("replication", "ok", "primary without replicas (no failover can hand a lock out twice)");
  const minText = config.get("min-replicas-to-write") ?? config.get("min-slaves-to-write");
  const min = minText === undefined ? undefined : Number(minText);
  const listed = `primary with ${plural(replicas, "replica")}`;
  if (min === undefined) return check("replication", "warn", `${listed}; min-replicas-to-write unknown (CONFIG unavailable): replication is asynchronous, so a failover can lose a just-taken lock`);
  if (min === 0) {
    return check("replication", "warn",
      `${listed}, min-replicas-to-write 0: replication is asynchronous, so a failover can promote a replica that never saw ` +
      "a just-taken lock and grant it again; set min-replicas-to-write 1 (with min-replicas-max-lag) to narrow that window");
  }
  return check("replication", "ok", `${listed}, min-replicas-to-write ${min}`);
}

/** The median PING round trip: every acquire, renewal and release waits for one. */
export async function checkLatency(server: Redis, check: Make): Promise<Check> {
  const times: number[] = [];
  for (let i = 0; i < PINGS; i++) {
    const startedAt = performance.now();
    await server.ping();
    times.push(performance.now() - startedAt);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] as number;
  const max = times[times.length - 1] as number;
  const detail = `PING round trip ${median.toFixed(1)} ms (median of ${PINGS}, max ${max.toFixed(1)} ms)`;
  if (median >= LATENCY_FAIL_MS) return check("latency", "fail", `${detail}: too slow to renew leases reliably`);
  if (median >= LATENCY_WARN_MS) return check("latency", "warn", `${detail}: every acquire, renewal and release waits this long; keep ttl well above it`);
  return check("latency", "ok", detail);
}

/** A Cluster serves every slot. */
export async function checkCluster(d: Deployment, name: string, primaries: number): Promise<Check> {
  const info = parseInfo(await d.client.cluster("INFO").then(String, () => ""));
  const state = info.get("cluster_state") ?? "unknown";
  if (state !== "ok") return { node: name, check: "cluster", status: "fail", detail: `cluster_state ${state}: some slots are not served` };
  return { node: name, check: "cluster", status: "ok", detail: `Cluster with ${plural(primaries, "primary", "primaries")}, cluster_state ok` };
}
