/**
 * Type-level tests of the public surface: checked by `tsc` (npm test), never run. Each
 * `@ts-expect-error` line must fail to compile, or the build fails.
 */
import type { Redis } from "ioredis";
import {
  type AcquireOptions, CountDownLatch, Election, FencingGuard, type Leader, Lease, LockLostError, type LockLostReason, type Lockable, MultiLock,
  Mutex, ReadWriteLock, ReadWriteSide, Semaphore, Surelock, SurelockError,
} from "../src/index.js";
import * as published from "surelock";

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
  const several: Lease | null = await sem.tryAcquire({ permits: 2 });
  const taken: number = (several?.permits ?? 0) + (await sem.withLock((l) => l.permits, { permits: 1, timeout: 10 }));
  await sem.setPermits(taken + sem.permits);
  // @ts-expect-error: only a semaphore counts permits
  await mutex.acquire({ permits: 2 });
  const election: Election = locks.election("e", { ttl: 5_000 });
  const leadership: Lease = await election.campaign({ value: "v", timeout: 10, signal: AbortSignal.timeout(5) });
  const leader: Leader | null = await election.leader();
  for await (const change of election.observe({ signal: AbortSignal.timeout(5) })) {
    const value: string | null | undefined = change?.value;
    void value;
  }
  const latch: CountDownLatch = locks.latch("l", { count: 3, ttl: 60_000 });
  const left: number = await latch.countDown({ id: "worker-1" });
  await latch.wait({ timeout: 10 });
  void [leadership, leader, left];
  // @ts-expect-error: a value is a string
  await election.campaign({ value: 7 });
  // @ts-expect-error: a latch needs its count
  locks.latch("l", {});
  // @ts-expect-error: a leader's token is a bigint
  const tokenNumber: number | undefined = leader?.fencingToken;
  void tokenNumber;
  const set: MultiLock = locks.multiLock(["{o}:a", "{o}:b"], { ttl: 5_000 });
  const keys: readonly string[] = set.keys;
  const held: Lease = await set.acquire({ timeout: 10 });
  const tokens: ReadonlyMap<string, bigint> = held.fencingTokens;
  void [keys, tokens];
  // @ts-expect-error: a multiLock takes an array of keys
  locks.multiLock("a");
}

/** What the code forbids, the types forbid too: in the sources, and in the published declarations. */
export function forbidden(): void {
  // @ts-expect-error: a primitive is made by a Surelock, never with `new`
  new Mutex();
  // @ts-expect-error: a lease is made by acquire(), tryAcquire() or withLock()
  new Lease();
  // @ts-expect-error: a guard is made by Surelock.guard()
  new FencingGuard();
  // @ts-expect-error: made by Surelock.semaphore()
  new Semaphore();
  // @ts-expect-error: made by Surelock.readWriteLock()
  new ReadWriteLock();
  // @ts-expect-error: made by ReadWriteLock.read() / write()
  new ReadWriteSide();
  // @ts-expect-error: made by Surelock.election()
  new Election();
  // @ts-expect-error: made by Surelock.latch()
  new CountDownLatch();
  // @ts-expect-error: made by Surelock.multiLock()
  new MultiLock();
  // @ts-expect-error: published: no constructors either
  new published.Election();
  // @ts-expect-error: published: cannot be subclassed
  class MyLatch extends published.CountDownLatch {}
  void MyLatch;
  // @ts-expect-error: not a Redis client, nor a RedisAdapter
  new Surelock({ redis: { hello: 1 } });
  // @ts-expect-error: published: no constructors either
  new published.Mutex();
  // @ts-expect-error: published
  new published.Lease();
  // @ts-expect-error: published
  new published.Surelock({ redis: { hello: 1 } });
  // @ts-expect-error: published: a primitive cannot be subclassed
  class MyMutex extends published.Mutex {}
  void MyMutex;
  const lockable: Lockable = mutex;
  const publishedLockable: published.Lockable = new published.Surelock({ redis }).mutex("k");
  void [lockable, publishedLockable];
}
