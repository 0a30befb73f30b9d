/**
 * `surelock doctor`: checks that a deployment keeps the promises locks rely on. Each check says
 * ok, warn or fail and why; any fail (or, with --strict, any warning) exits with code 1, a
 * server that could not be reached with 69, one that refused the credentials with 77. Besides
 * the server's settings, it measures what the protocol assumes of time (docs/protocol.md): each
 * server's clock against this host's, and in quorum mode the nodes' clocks against each other,
 * and whether a restarted node remembers its locks (Redlock's restart delay when it does not).
 */
import type { Redis } from "ioredis";
import { performance } from "node:perf_hooks";
import type { ClockOffset } from "./clock-offset.js";
import { CONNECT_TIMEOUT_MS, connect, disconnectAll, type Deployment, type RedisAddress } from "./connection.js";
import { messageOf, type Check, type Durability, type Status } from "./doctor/check.js";
import { checkClock, measureClock } from "./doctor/clock-checks.js";
import { checkEviction, checkPersistence } from "./doctor/persistence-checks.js";
import { checkQuorum, checkQuorumClocks, checkRestartDelay } from "./doctor/quorum-checks.js";
import { checkCluster, checkLatency, checkRole, checkScripting, checkVersion } from "./doctor/server-checks.js";
import { parseInfo, readConfig } from "./doctor/server-settings.js";
import { formatDuration } from "./duration.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { plural, print, printJson, table } from "./output.js";

export type { Check, Status } from "./doctor/check.js";

/** What `surelock doctor` was asked: the servers, the output format, whether warnings fail. */
export interface DoctorOptions {
  readonly addresses: readonly RedisAddress[];
  readonly json: boolean;
  /** Warnings fail too. */
  readonly strict: boolean;
  /** The `counterRetention` the deployment's Surelock instances use, ms: how far back a clock may step. */
  readonly counterRetentionMs: number;
}

/** surelock's default `counterRetention` (what `doctor` assumes unless told otherwise). */
export const DEFAULT_COUNTER_RETENTION_MS = 300_000;

/** What one server told about itself that the quorum checks need. */
interface ServerFacts {
  readonly checks: Check[];
  readonly clock: ClockOffset | undefined;
  readonly durable: Durability;
}

/** Runs every check, prints the checklist (or JSON) and answers the exit code. */
export async function doctor(o: DoctorOptions): Promise<number> {
  const checks: Check[] = [];
  const deployments: Deployment[] = [];
  const runIds = new Map<string, string>();
  const clocks: { node: string; offset: ClockOffset }[] = [];
  const durability = new Map<string, Durability>();
  /** The exit code of a server that could not be connected to (69 unreachable, 77 credentials refused), if any. */
  let notConnected: number | undefined;
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
        notConnected = Math.max(notConnected ?? 0, error.exitCode);
        continue;
      }
      deployments.push(d);
      checks.push({ node: name, check: "connection", status: "ok", detail: `connected to ${address.display} in ${formatDuration(performance.now() - startedAt)}` });
      const servers = d.primaries();
      for (const server of servers) {
        const node = d.cluster ? `${server.options.host ?? "?"}:${server.options.port ?? "?"}` : name;
        const facts = await checkServer(server, node, d.cluster, o.counterRetentionMs).catch((error: unknown): ServerFacts => ({
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
      checks.push(...checkQuorum(o.addresses.length, runIds), ...checkQuorumClocks(clocks, o.counterRetentionMs), ...checkRestartDelay(durability));
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
  // A server it could not check is not a finding about the deployment: say why it could not.
  if (notConnected !== undefined) return notConnected;
  return failed ? ExitCode.failed : ExitCode.ok;
}

/** The checks of one server: version, scripting, role and replicas, persistence, eviction, latency, clock. */
async function checkServer(server: Redis, node: string, inCluster: boolean, counterRetentionMs: number): Promise<ServerFacts> {
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
      checkClock(clock, node, counterRetentionMs),
    ],
    clock,
    durable: persistence.durable,
  };
}
