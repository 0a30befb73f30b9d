/**
 * `surelock doctor`: checks that a deployment keeps the promises locks rely on. Each check says
 * ok, warn or fail and why; any fail (or, with --strict, any warning) exits with code 1.
 */
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import { CONNECT_TIMEOUT_MS, connect, disconnectAll, type Deployment, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { plural, print, printJson, table } from "./output.js";

export interface DoctorOptions {
  readonly addresses: readonly RedisAddress[];
  readonly json: boolean;
  /** Warnings fail too. */
  readonly strict: boolean;
}

export type Status = "ok" | "warn" | "fail";

/** One line of the checklist (and one entry of `--json`). */
export interface Check {
  /** The server checked (`host:port`), or `quorum` for checks across the `--redis` URLs. */
  readonly node: string;
  readonly check: string;
  readonly status: Status;
  readonly detail: string;
}

/** Median round trips above these are worth a warning / make locks impractical. */
const LATENCY_WARN_MS = 50;
const LATENCY_FAIL_MS = 1_000;
const PINGS = 5;

export async function doctor(o: DoctorOptions): Promise<number> {
  const checks: Check[] = [];
  const deployments: Deployment[] = [];
  const runIds = new Map<string, string>();
  try {
    for (const address of o.addresses) {
      const name = `${address.host}:${address.port}`;
      const startedAt = performance.now();
      let d: Deployment;
      try {
        d = await connect(address, { reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
      } catch (error) {
        if (!(error instanceof CliError)) throw error;
        checks.push({ node: name, check: "connection", status: "fail", detail: error.message });
        continue;
      }
      deployments.push(d);
      checks.push({ node: name, check: "connection", status: "ok", detail: `connected to ${address.display} in ${formatDuration(performance.now() - startedAt)}` });
      const servers = d.primaries();
      for (const server of servers) {
        const node = d.cluster ? `${server.options.host ?? "?"}:${server.options.port ?? "?"}` : name;
        const found = await checkServer(server, node, d.cluster).catch((error: unknown) => [
          { node, check: "server", status: "fail" as const, detail: `could not be checked: ${messageOf(error)}` },
        ]);
        checks.push(...found);
        const runId = await server.info("server").then((text) => parseInfo(text).get("run_id"), () => undefined);
        if (runId !== undefined && !d.cluster) runIds.set(name, runId);
      }
      if (d.cluster) checks.push(await checkCluster(d, name, servers.length));
    }
    if (o.addresses.length > 1) checks.push(...checkQuorum(o.addresses.length, runIds));
  } finally {
    await disconnectAll(deployments);
  }

  const count = (s: Status): number => checks.filter((c) => c.status === s).length;
  const failed = count("fail") > 0 || (o.strict && count("warn") > 0);
  if (o.json) {
    printJson({ ok: !failed, checks });
  } else {
    print(...table(undefined, checks.map((c) => [c.status, c.node, c.check, c.detail])));
    print(`${plural(count("ok"), "check")} ok, ${plural(count("warn"), "warning")}, ${plural(count("fail"), "failure")}`);
  }
  return failed ? ExitCode.failed : ExitCode.ok;
}

/** The checks of one server: version, scripting, role and replicas, persistence, eviction, latency. */
async function checkServer(server: Redis, node: string, inCluster: boolean): Promise<Check[]> {
  const info = parseInfo(await server.info());
  const config = await readConfig(server);
  const check = (name: string, status: Status, detail: string): Check => ({ node, check: name, status, detail });
  return [
    checkVersion(info, inCluster, check),
    await checkScripting(server, check),
    checkRole(info, config, check),
    checkPersistence(info, config, check),
    checkEviction(info, config, check),
    await checkLatency(server, check),
  ];
}

type Make = (name: string, status: Status, detail: string) => Check;

function checkVersion(info: Map<string, string>, inCluster: boolean, check: Make): Check {
  const text = info.get("redis_version") ?? "";
  const [major = 0, minor = 0, patch = 0] = text.split(".").map(Number);
  const v = major * 10_000 + minor * 100 + patch;
  const server = `${info.get("server_name") === "valkey" ? "Valkey (Redis-compatible)" : "Redis"} ${text}`;
  if (v < 60_006) return check("version", "fail", `${server}: surelock's scripts need at least 6.0.6 (LPOS for fair locks); 6.2 or later is recommended`);
  if (inCluster && v < 70_000) return check("version", "fail", `${server}: a Cluster needs Redis 7 for sharded pub/sub (SPUBLISH), which carries surelock's wake-ups`);
  if (v < 60_200) return check("version", "warn", `${server}: works, but 6.2 or later is recommended (7 for a Cluster)`);
  return check("version", "ok", server);
}

async function checkScripting(server: Redis, check: Make): Promise<Check> {
  try {
    const reply = await server.eval("return redis.call('TIME')", 0);
    if (!Array.isArray(reply)) return check("scripting", "fail", "EVAL answered unexpectedly; surelock runs every operation as a Lua script");
    return check("scripting", "ok", "EVAL works (every lock operation is one Lua script)");
  } catch (error) {
    return check("scripting", "fail", `EVAL failed (${messageOf(error)}): surelock runs every operation as a Lua script; allow EVAL/EVALSHA (ACL, rename-command)`);
  }
}

function checkRole(info: Map<string, string>, config: Map<string, string>, check: Make): Check {
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

function checkPersistence(info: Map<string, string>, config: Map<string, string>, check: Make): Check {
  const aof = config.get("appendonly") ?? (info.get("aof_enabled") === "1" ? "yes" : "no");
  const fsync = config.get("appendfsync");
  const save = config.get("save");
  const restart = "a restart forgets locks that are still held while their holders keep working";
  if (aof === "yes") {
    if (fsync === "always") return check("persistence", "ok", "appendonly yes, appendfsync always");
    if (fsync === "everysec") return check("persistence", "ok", "appendonly yes, appendfsync everysec (a power loss can forget the last second of lock changes)");
    if (fsync === undefined) return check("persistence", "ok", "appendonly yes (appendfsync unknown: CONFIG unavailable)");
    return check("persistence", "warn", `appendonly yes, appendfsync ${fsync}: the OS decides when writes reach the disk, so ${restart}; use everysec or always`);
  }
  const snapshots = save === undefined ? "save unknown (CONFIG unavailable)" : save === "" ? 'save ""' : `save "${save}"`;
  const advice = "enable appendonly (appendfsync everysec or always), or keep a restarted server out of service for longer than the longest ttl";
  if (save !== undefined && save !== "") return check("persistence", "warn", `appendonly no, ${snapshots}: snapshots only, so ${restart} since the last snapshot; ${advice}`);
  return check("persistence", "warn", `appendonly no, ${snapshots}: ${restart}; ${advice}`);
}

function checkEviction(info: Map<string, string>, config: Map<string, string>, check: Make): Check {
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

async function checkLatency(server: Redis, check: Make): Promise<Check> {
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

async function checkCluster(d: Deployment, name: string, primaries: number): Promise<Check> {
  const info = parseInfo(await d.client.cluster("INFO").then(String, () => ""));
  const state = info.get("cluster_state") ?? "unknown";
  if (state !== "ok") return { node: name, check: "cluster", status: "fail", detail: `cluster_state ${state}: some slots are not served` };
  return { node: name, check: "cluster", status: "ok", detail: `Cluster with ${plural(primaries, "primary", "primaries")}, cluster_state ok` };
}

/** Across the `--redis` URLs of quorum mode: enough nodes, and no node counted twice. */
function checkQuorum(n: number, runIds: ReadonlyMap<string, string>): Check[] {
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

/** CONFIG GET of the settings we check, one at a time (older servers take one pattern per call). */
async function readConfig(server: Redis): Promise<Map<string, string>> {
  const names = ["appendonly", "appendfsync", "save", "maxmemory-policy", "maxmemory", "min-replicas-to-write"];
  const config = new Map<string, string>();
  const replies = await Promise.all(names.map((n) => server.config("GET", n).catch(() => [] as unknown)));
  for (const reply of replies) {
    const flat = Array.isArray(reply) ? (reply as unknown[]).map(String) : [];
    for (let i = 0; i + 1 < flat.length; i += 2) config.set(flat[i] as string, flat[i + 1] as string);
  }
  return config;
}

function parseInfo(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0 && !line.startsWith("#")) map.set(line.slice(0, i), line.slice(i + 1));
  }
  return map;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
