/**
 * Every request the etcd store makes goes through here: bounded by a gRPC deadline (an unreachable
 * cluster is a ConnectionError within the bound, never a hang) and its failure sorted into
 * surelock's typed errors.
 */
import type { Etcd3 } from "etcd3";
import { ConnectionError, ScriptError } from "../errors.js";

/** An etcd client's failure that means the lease named in the request no longer exists. */
export function isLeaseGone(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.constructor.name === "EtcdLeaseInvalidError" || /lease not found/i.test(error.message);
}

/**
 * The client's recoverable errors carry a symbol property (etcd3's RecoverableError); the rest are
 * answers from etcd that retrying will not change (permission denied, a request too large).
 */
function isRecoverable(error: Error): boolean {
  if (Object.getOwnPropertySymbols(error).some((s) => s.description === "RecoverableError")) return true;
  // cockatiel's BrokenCircuitError / IsolatedCircuitError: the client stopped trying a failing host for a while.
  if (/Circuit/.test(error.constructor.name) || /circuit breaker/i.test(error.message)) return true;
  return /deadline|unavailable|closed|ECONNREFUSED|No connection established|timed? ?out/i.test(error.message) || error.constructor.name === "GRPCDeadlineExceededError";
}

/** Sorts a failed request's error: ConnectionError (retry may help) or ScriptError (it will not). */
export function typed(error: unknown, what: string): Error {
  if (error instanceof ConnectionError || error instanceof ScriptError) return error;
  if (error instanceof Error && !isRecoverable(error)) {
    return new ScriptError(`etcd refused ${what}: ${error.message}`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ConnectionError(`etcd did not answer ${what}: ${message}`, { cause: error });
}

/** gRPC call options for one request of at most `ms`. */
export function bounded(ms: number): { deadline: Date } {
  return { deadline: new Date(Date.now() + Math.max(1, ms)) };
}

/**
 * The parts of an `Etcd3` the store uses: its raw KV, Lease and Watch RPC clients (a namespaced
 * client is refused: its raw clients ignore the namespace). Not the client's shared watch manager:
 * see `watchOnce` in store.ts.
 */
export type EtcdClient = Pick<Etcd3, "kv" | "leaseClient" | "watchClient">;

export function isEtcdClient(value: unknown): value is EtcdClient {
  const c = value as Partial<Record<"kv" | "leaseClient" | "watchClient", unknown>> | null;
  return (
    typeof c === "object" && c !== null &&
    typeof (c.watchClient as { watch?: unknown } | undefined)?.watch === "function" &&
    typeof (c.kv as { txn?: unknown } | undefined)?.txn === "function" &&
    typeof (c.leaseClient as { leaseGrant?: unknown } | undefined)?.leaseGrant === "function"
  );
}

/**
 * Closes a gRPC stream of the client's without telling the client that its host failed. etcd3
 * listens for a stream's error and, while the stream is still writable, counts it against the host
 * (its circuit breaker opens after three in a row) and closes every gRPC client of that host: a
 * cancel alone does exactly that (CANCELLED counts as a failure). Half-closing first makes the
 * stream unwritable, so the cancel that follows (which frees the server's side at once: etcd keeps
 * a watch open after a half-close) is not taken for a failure.
 */
export function closeStream(stream: { end(): void; cancel(): void }): void {
  try {
    stream.end();
  } catch {
    // Already ended.
  }
  try {
    stream.cancel();
  } catch {
    // Already closed.
  }
}
