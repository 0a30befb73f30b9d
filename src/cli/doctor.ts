/**
 * `surelock doctor`: checks that a deployment keeps the promises locks rely on. Each check says
 * ok, warn or fail and why; any fail (or, with --strict, any warning) exits with code 1. Besides
 * the server's settings, it measures what the protocol assumes of time (docs/protocol.md): each
 * server's clock against this host's, and in quorum mode the nodes' clocks against each other,
 * and whether a restarted node remembers its locks (Redlock's restart delay when it does not).
 */
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import { atLeast, clockOffset, clockSpread, parseTime, type ClockOffset, type TimeSample } from "./clock-offset.js";
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
  /** The `clock` check only: the server's clock minus this host's, ms (± `boundMs`). */
  readonly offsetMs?: number;
  /** The `clock` check only: the bound of `offsetMs` (half the round trip), ms. */
  readonly boundMs?: number;
}

/** Median round trips above these are worth a warning / make locks impractical. */
const LATENCY_WARN_MS = 50;
const LATENCY_FAIL_MS = 1_000;
const PINGS = 5;

/** TIME round trips per server; the shortest one bounds the offset best. */
const TIME_SAMPLES = 5;
/** NTP keeps clocks within milliseconds: a clock further off than this is not synchronised. */
export const CLOCK_WARN_MS = 1_000;
/** surelock's default counterRetention: how far back a server clock may step without repeating a token. */
const COUNTER_RETENTION_MS = 300_000;
/** Quorum: nodes further apart than half the counter retention break token monotonicity across restarts. */
export const CLOCK_SPREAD_FAIL_MS = COUNTER_RETENTION_MS / 2;

/** What one server told about itself that the quorum checks need. */
interface ServerFacts {
  readonly checks: Check[];
  readonly clock: ClockOffset | undefined;
  /** Whether a restart keeps every lock change: appendfsync always; unknown without CONFIG. */
  readonly durable: "yes" | "no" | "unknown";
}

export async function doctor(o: DoctorOptions): Promise<number> {
  const checks: Check[] = [];
  const deployments: Deployment[] = [];
  const runIds = new Map<string, string>();
  const clocks: { node: string; offset: ClockOffset }[] = [];
  const durability = new Map<string, ServerFacts["durable"]>();
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
        const facts = await checkServer(server, node, d.cluster).catch((error: unknown): ServerFacts => ({
          checks: [{ node, check: "server", status: "fail", detail: `could not be checked: ${messageOf(error)}` }],
          clock: undefined,
          durable: "unknown",
        }));
        checks.push(...facts.checks);
        if (!d.cluster) {
          if (facts.clock) clocks.push({ node, offset: facts.clock });
          durability.set(node, facts.durable);
        }
        const runId = await server.info("server").then((text) => parseInfo(text).get("run_id"), () => undefined);
        if (runId !== undefined && !d.cluster) runIds.set(name, runId);
      }
      if (d.cluster) checks.push(await checkCluster(d, name, servers.length));
    }
    if (o.addresses.length > 1) {
      checks.push(...checkQuorum(o.addresses.length, runIds), ...checkQuorumClocks(clocks), ...checkRestartDelay(durability));
    }
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

/** The checks of one server: version, scripting, role and replicas, persistence, eviction, latency, clock. */
async function checkServer(server: Redis, node: string, inCluster: boolean): Promise<ServerFacts> {
  const info = parseInfo(await server.info());
  const { config, refused } = await readConfig(server);
  const check = (name: string, status: Status, detail: string): Check => ({ node, check: name, status, detail });
  const persistence = checkPersistence(info, config, refused, check);
  const clock = await measureClock(server).catch(() => undefined);
  return {
    checks: [
      checkVersion(info, inCluster, check),
      await checkScripting(server, check),
      checkRole(info, config, check),
      persistence.check,
      checkEviction(info, config, check),
      await checkLatency(server, check),
      checkClock(clock, node),
    ],
    clock,
    durable: persistence.durable,
  };
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

/**
 * AOF and snapshots, from CONFIG GET; when CONFIG is renamed or denied, from INFO persistence,
 * which says whether AOF is on but not how often it syncs, nor the snapshot schedule.
 */
function checkPersistence(info: Map<string, string>, config: Map<string, string>, refused: string | undefined, check: Make): { check: Check; durable: ServerFacts["durable"] } {
  const fromInfo = !config.has("appendonly");
  const aof = config.get("appendonly") ?? (info.get("aof_enabled") === "1" ? "yes" : "no");
  const fsync = config.get("appendfsync");
  const save = config.get("save");
  const source = fromInfo ? ` (from INFO persistence: CONFIG ${refused ?? "unavailable"})` : "";
  const restart = "a restart forgets locks that are still held while their holders keep working";
  const result = (status: Status, detail: string, durable: ServerFacts["durable"]): { check: Check; durable: ServerFacts["durable"] } =>
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

/** The server's clock against this host's, from the TIME round trip with the shortest time. */
async function measureClock(server: Redis): Promise<ClockOffset | undefined> {
  // performance.timeOrigin + performance.now() is the wall clock with sub-ms resolution (Date.now()
  // has 1 ms), on one monotonic timeline for the whole measurement.
  const now = (): number => performance.timeOrigin + performance.now();
  await server.call("TIME"); // the first call may pay for a cold connection path
  const samples: TimeSample[] = [];
  for (let i = 0; i < TIME_SAMPLES; i++) {
    const sentAtMs = now();
    const reply = await server.call("TIME");
    const receivedAtMs = now();
    const serverUs = parseTime(reply);
    if (serverUs === undefined) return undefined;
    samples.push({ sentAtMs, receivedAtMs, serverUs });
  }
  return clockOffset(samples);
}

/** Offsets below 10 ms with decimals (two below 1 ms), larger ones as durations. */
function formatOffset(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1) return `${abs.toFixed(2)} ms`;
  return abs < 10 ? `${abs.toFixed(1)} ms` : formatDuration(abs);
}

function checkClock(clock: ClockOffset | undefined, node: string): Check {
  if (!clock) return { node, check: "clock", status: "warn", detail: "TIME did not answer as Redis does: the server's clock could not be compared with this host's" };
  const measured = { offsetMs: round(clock.offsetMs), boundMs: round(clock.boundMs) };
  const direction = clock.offsetMs >= 0 ? "ahead of" : "behind";
  const what = `TIME ${formatOffset(clock.offsetMs)} ${direction} this host's clock (± ${formatOffset(clock.boundMs)}, best of ${TIME_SAMPLES} round trips)`;
  if (atLeast(clock.offsetMs, clock.boundMs) <= CLOCK_WARN_MS) return { node, check: "clock", status: "ok", detail: what, ...measured };
  return {
    node, check: "clock", status: "warn", ...measured,
    detail: `${what}: one of the two clocks is not synchronised. A lock whose counter expired restarts its fencing tokens from ` +
      "this server's clock, above the old ones only if that clock never steps back by more than the counter retention " +
      "(5 min by default); an unsynchronised clock is the one that gets stepped when it is corrected: run NTP (chrony, " +
      "systemd-timesyncd) on the server and on this host",
  };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;

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

/**
 * Quorum: the nodes' clocks against each other (this host's cancels out). A node restarted
 * without its data restarts its counters at its clock; tokens stay increasing only while every
 * node is within half the restart delay, and half the counter retention, of the others.
 */
function checkQuorumClocks(clocks: readonly { node: string; offset: ClockOffset }[]): Check[] {
  const spread = clockSpread(clocks);
  if (!spread) return [];
  const what = `clocks of ${clocks.length} nodes within ${formatOffset(spread.spreadMs)} of each other (± ${formatOffset(spread.boundMs)})`;
  const rule = "a restarted node restarts its fencing counters at its own clock, so tokens keep growing only while every node's clock is " +
    "within half the restart delay, and half the counter retention (5 min by default), of the others";
  const least = atLeast(spread.spreadMs, spread.boundMs);
  if (least > CLOCK_SPREAD_FAIL_MS) {
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
function checkRestartDelay(durability: ReadonlyMap<string, ServerFacts["durable"]>): Check[] {
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

/**
 * CONFIG GET of the settings we check, one at a time (older servers take one pattern per call).
 * `refused` says why CONFIG gave nothing (renamed away, or denied by an ACL), when it did not.
 */
async function readConfig(server: Redis): Promise<{ config: Map<string, string>; refused: string | undefined }> {
  const names = ["appendonly", "appendfsync", "save", "maxmemory-policy", "maxmemory", "min-replicas-to-write"];
  const config = new Map<string, string>();
  let refused: string | undefined;
  const why = (error: unknown): string => {
    const message = messageOf(error);
    if (/NOPERM/.test(message)) return "denied by an ACL";
    if (/unknown command/i.test(message)) return "renamed or disabled";
    return `failed: ${message}`;
  };
  const replies = await Promise.all(names.map((n) => server.config("GET", n).catch((error: unknown) => {
    refused ??= why(error);
    return [] as unknown;
  })));
  for (const reply of replies) {
    const flat = Array.isArray(reply) ? (reply as unknown[]).map(String) : [];
    for (let i = 0; i + 1 < flat.length; i += 2) config.set(flat[i] as string, flat[i + 1] as string);
  }
  return { config, refused };
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
