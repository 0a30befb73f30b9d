/**
 * Type-level tests of the public surface: checked by `tsc` (npm test), never run. Each
 * `@ts-expect-error` line must fail to compile, or the build fails.
 */
import type { Redis } from "ioredis";
import {
  type AcquireOptions, type Lease, LockLostError, type LockLostReason, Mutex, Semaphore, Surelock, SurelockError,
} from "../src/index.js";

declare const redis: Redis;
const locks = new Surelock({ redis, ttl: 1_000, prefix: "app" });
new Surelock({ redis: [redis, redis, redis] });

const mutex: Mutex = locks.mutex("k", { fair: true });
const sem: Semaphore = locks.semaphore("s", { permits: 2 });
export async function shapes(): Promise<void> {
  const lease: Lease = await mutex.acquire({ timeout: 10, signal: AbortSignal.timeout(5), owner: "x" });
  const token: bigint = lease.fencingToken;
  const signal: AbortSignal = lease.signal;
  const maybe: Lease | null = await sem.tryAcquire();
  const n: number = await locks.withLock("k", async (l) => (l.held ? 1 : 0));
  const r: string = await locks.readWriteLock("d").read().withLock(() => "sync values work too");
  const reason: LockLostReason = new LockLostError("k", "taken").reason;
  const code: string = new SurelockError("X", "y").code;
  void [token, signal, maybe, n, r, reason, code];
  // @ts-expect-error: the fencing token is a bigint, not a number
  const wrong: number = lease.fencingToken;
  // @ts-expect-error: options are typed
  const bad: AcquireOptions = { timeout: "10" };
  // @ts-expect-error: permits are required for a semaphore
  locks.semaphore("s", {});
  void [wrong, bad];
}
