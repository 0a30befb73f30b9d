/**
 * Connections for the CLI: one ioredis client per `--redis` URL, failing fast. A URL that
 * points at a Cluster node becomes an ioredis Cluster client (detected with INFO cluster).
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { AUTH_HINT, CliError, ExitCode, isAuthFailure } from "./exit-codes.js";

/** A parsed `--redis` URL. */
export interface RedisAddress {
  /** The URL without its password, for messages. */
  readonly display: string;
  readonly host: string;
  readonly port: number;
  /** Credentials, TLS and database from the URL. */
  readonly options: RedisOptions;
}

/** How to connect: one-shot commands give up at once, `exec` keeps reconnecting while it holds a lock. */
export interface ConnectOptions {
  readonly reconnect: boolean;
  /** Longest wait for the first connection (TCP + handshake), in ms. */
  readonly connectTimeoutMs: number;
}

/** One deployment reached through one URL: a standalone server (or primary) or a Cluster. */
export interface Deployment {
  readonly address: RedisAddress;
  /** `host:port` of the URL; the node label in output. */
  readonly name: string;
  readonly client: Redis | Cluster;
  readonly cluster: boolean;
  /** A client per primary: the server itself, or every master of the Cluster (for SCAN, INFO, CONFIG). */
  primaries(): Redis[];
}

/** The default when neither `--redis` nor `REDIS_URL` is given. */
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** Longest wait for one reply in the one-shot commands, so a stopped server cannot hang them. */
const COMMAND_TIMEOUT_MS = 5_000;

/** Parses `redis://[user[:password]@]host[:port][/db]` (or `rediss://` for TLS); undefined if it is not one. */
export function parseRedisUrl(text: string): RedisAddress | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if ((url.protocol !== "redis:" && url.protocol !== "rediss:") || url.hostname === "") return undefined;
  const port = url.port === "" ? 6379 : Number(url.port);
  const dbText = url.pathname.replace(/^\//, "");
  if (dbText !== "" && !/^\d+$/.test(dbText)) return undefined;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const options: RedisOptions = {};
  if (url.username !== "") options.username = decodeURIComponent(url.username);
  if (url.password !== "") options.password = decodeURIComponent(url.password);
  if (dbText !== "") options.db = Number(dbText);
  if (url.protocol === "rediss:") options.tls = { servername: host };
  const shown = new URL(url.href);
  if (shown.password !== "") shown.password = "***";
  return { display: shown.href.replace(/\/$/, ""), host, port, options };
}

/** The nodes that answered, and why the others did not. */
export interface Reached {
  readonly deployments: Deployment[];
  /** Each address that could not be reached, with why (a CliError with exit code 69). */
  readonly failures: { readonly address: RedisAddress; readonly error: CliError }[];
}

/**
 * Connects to every address, in parallel. In quorum mode the commands go on with the nodes they
 * reached and report the others; throws (exit code 69) only when none answered.
 */
export async function connectReachable(addresses: readonly RedisAddress[], options: ConnectOptions): Promise<Reached> {
  const results = await Promise.allSettled(addresses.map((a) => connect(a, options)));
  const deployments = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failures = results.flatMap((r, i) =>
    r.status === "rejected" ? [{ address: addresses[i] as RedisAddress, error: asCliError(r.reason) }] : []);
  if (deployments.length === 0) throw (failures[0] as { error: CliError }).error;
  return { deployments, failures };
}

/**
 * A client for a node that did not answer at start, which keeps trying in the background: in
 * quorum mode `exec` must still count it, or a smaller majority would decide.
 */
export function unreachable(address: RedisAddress, connectTimeoutMs: number): Deployment {
  const client = new Redis({
    ...address.options,
    host: address.host,
    port: address.port,
    connectTimeout: connectTimeoutMs,
    disconnectTimeout: 200,
    maxRetriesPerRequest: 1,
    retryStrategy: (times: number) => Math.min(times * 100, 1_000),
  });
  watchErrors(client);
  return { address, name: `${address.host}:${address.port}`, client, cluster: false, primaries: () => [client] };
}

function asCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (isAuthFailure(error)) return new CliError(`${message}${AUTH_HINT}`, ExitCode.noPermission);
  return new CliError(message, ExitCode.unavailable);
}

/** Closes the clients, politely if they answer at once, otherwise by dropping the sockets. */
export async function disconnectAll(deployments: readonly Deployment[]): Promise<void> {
  await Promise.all(deployments.map((d) => close(d.client)));
}

/** Connects to one address; throws CliError (exit code 69) if it cannot be reached in time. */
export async function connect(address: RedisAddress, options: ConnectOptions): Promise<Deployment> {
  const name = `${address.host}:${address.port}`;
  const base: RedisOptions = {
    ...address.options,
    connectTimeout: options.connectTimeoutMs,
    // How long a closing socket may linger before it is destroyed (it would keep the CLI alive).
    disconnectTimeout: 200,
    maxRetriesPerRequest: 1,
    // A one-shot command must not hang on a server that accepts connections but never answers.
    ...(options.reconnect ? {} : { commandTimeout: COMMAND_TIMEOUT_MS }),
  };
  const retry = options.reconnect ? (times: number) => Math.min(times * 100, 1_000) : () => null;
  const probe = new Redis({ ...base, host: address.host, port: address.port, lazyConnect: true, retryStrategy: retry });
  const lastError = watchErrors(probe);
  await ready(probe.connect(), probe, address, options.connectTimeoutMs, lastError);

  const clusterInfo = await probe.info("cluster").catch(() => "");
  if (!/^cluster_enabled:1\s*$/m.test(clusterInfo)) {
    return { address, name, client: probe, cluster: false, primaries: () => [probe] };
  }
  await close(probe);
  const cluster = new Cluster([{ host: address.host, port: address.port }], {
    lazyConnect: true,
    redisOptions: base,
    clusterRetryStrategy: retry,
    slotsRefreshTimeout: options.connectTimeoutMs,
  });
  const clusterError = watchErrors(cluster);
  await ready(cluster.connect(), cluster, address, options.connectTimeoutMs, clusterError);
  return { address, name, client: cluster, cluster: true, primaries: () => cluster.nodes("master") };
}

/** Keeps the last connection error (an 'error' event without a listener would crash the CLI). */
function watchErrors(client: Redis | Cluster): { error: Error | undefined } {
  const last: { error: Error | undefined } = { error: undefined };
  client.on("error", (error: Error) => {
    last.error = error;
  });
  return last;
}

async function ready(
  connecting: Promise<void>,
  client: Redis | Cluster,
  address: RedisAddress,
  timeoutMs: number,
  last: { error: Error | undefined },
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  // connectTimeout covers TCP only: a stopped server still completes the handshake in the kernel.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs + 500);
  });
  try {
    await Promise.race([connecting, deadline]);
  } catch (error) {
    client.disconnect();
    const why = last.error?.message ?? (error instanceof Error ? error.message : String(error));
    const auth = isAuthFailure(last.error ?? error);
    throw new CliError(`cannot connect to ${address.display}: ${why}${auth ? AUTH_HINT : ""}`, auth ? ExitCode.noPermission : ExitCode.unavailable);
  } finally {
    clearTimeout(timer);
  }
}

async function close(client: Redis | Cluster): Promise<void> {
  if (client.status === "end") return;
  let timer: NodeJS.Timeout | undefined;
  const quitting = client.quit().then(() => true, () => false);
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), 500);
  });
  const polite = await Promise.race([quitting, late]);
  clearTimeout(timer);
  if (!polite) client.disconnect();
}

/** Longest wait for a first connection in every command. */
export const CONNECT_TIMEOUT_MS = 3_000;

/**
 * Runs `work` against one deployment; a failure that is not already a CliError becomes one
 * with exit code 69 that names the operation and the node.
 */
export async function onNode<T>(deployment: Deployment, what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CliError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (isAuthFailure(error)) throw new CliError(`${what} on ${deployment.name} failed: ${message}${AUTH_HINT}`, ExitCode.noPermission);
    throw new CliError(`${what} on ${deployment.name} failed: ${message}`, ExitCode.unavailable);
  }
}

/** What one node gave: a value, or why it could not. */
export interface NodeOutcome<T> {
  /** `host:port` of the URL. */
  readonly node: string;
  readonly value?: T;
  /** The one-line reason when the node was unreachable or the work failed on it. */
  readonly error?: string;
  /** With `error`: Redis refused the credentials or the ACL (exit code 77 rather than 69). */
  readonly refused?: boolean;
}

/**
 * Runs `work` on every reached node, in the order the URLs were given. A node that was not
 * reached, or on which the work failed, gives an error instead of failing the others.
 */
export function perNode<T>(addresses: readonly RedisAddress[], reached: Reached, what: string, work: (d: Deployment) => Promise<T>): Promise<NodeOutcome<T>[]> {
  return Promise.all(addresses.map(async (address): Promise<NodeOutcome<T>> => {
    const node = `${address.host}:${address.port}`;
    const failed = reached.failures.find((f) => f.address === address);
    const deployment = reached.deployments.find((d) => d.address === address);
    if (failed || !deployment) {
      return { node, error: failed?.error.message ?? "not connected", refused: failed?.error.exitCode === ExitCode.noPermission };
    }
    try {
      return { node, value: await onNode(deployment, what, () => work(deployment)) };
    } catch (error) {
      return { node, error: error instanceof Error ? error.message : String(error), refused: error instanceof CliError && error.exitCode === ExitCode.noPermission };
    }
  }));
}
