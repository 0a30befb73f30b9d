/** What one `surelock exec` was asked to do, and how its messages name the lock it holds. */
import type { RedisAddress } from "../connection.js";
import { quote } from "../output.js";

/**
 * The lock the command runs under. The mutex K and the read-write lock K are two different locks
 * (their keys live in different name spaces): `read` and `write` exclude each other, and neither
 * excludes the mutex.
 */
export type ExecLock =
  /** `--key K` alone: the mutex K, as `locks.mutex(K)`. */
  | { readonly kind: "mutex"; readonly fair: boolean }
  /** `--shared`: the read side of the read-write lock K (`flock -s`). */
  | { readonly kind: "read" }
  /** `--exclusive`: the write side of the read-write lock K (`flock -x`). */
  | { readonly kind: "write" }
  /** `--semaphore --permits N`: one permit of the semaphore K of N permits. */
  | { readonly kind: "semaphore"; readonly permits: number };

/** Everything `surelock exec` needs, checked (exec/args.ts reads it from the command line). */
export interface ExecOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  readonly key: string;
  readonly lock: ExecLock;
  /** Acquire as this owner (`acquire({ owner })`); undefined for a fresh one. */
  readonly owner: string | undefined;
  readonly ttlMs: number;
  /** Longest wait for the lock; Infinity to wait until interrupted. */
  readonly timeoutMs: number;
  /** After the lease is lost: time between SIGTERM and SIGKILL. */
  readonly killAfterMs: number;
  /** Keep the command in our process group (it may read the terminal; only it is signalled). */
  readonly foreground: boolean;
  /** Log the lock's life (acquire, renewals, loss, release) on stderr. */
  readonly verbose: boolean;
  readonly command: string;
  readonly args: readonly string[];
}

/** The lock in messages: `lock "K"`, `read lock "K"`, `write lock "K"`, `semaphore "K"`. */
export function subject(o: Pick<ExecOptions, "key" | "lock">): string {
  const name = { mutex: "lock", read: "read lock", write: "write lock", semaphore: "semaphore" }[o.lock.kind];
  return `${name} ${quote(o.key)}`;
}
