/**
 * What Redis holds for one user key, read by inspect.lua in one atomic step so the picture is
 * consistent: the mutex's holder and queue, the read-write lock's and the semaphore's holds and
 * queues. Shared by `inspect`, `list` and `exec` (to name who holds a lock).
 */
import type { Cluster, Redis } from "ioredis";
import { Endpoint } from "../adapters/endpoint.js";
import { IoredisAdapter, type IoredisLike } from "../adapters/ioredis.js";
import { systemClock } from "../clock.js";
import type { KeySpace } from "../keys.js";
import { scripts } from "../scripts/index.js";

/** The holder of a mutex. */
export interface Holder {
  readonly owner: string;
  /** The hold's id (its acquisition). */
  readonly hold: string;
  /** How many entries (re-entries) the hold has. */
  readonly entries: number;
  /** Decimal string: tokens can exceed JSON's safe integers. */
  readonly fencingToken: string;
  /** Time left on the lease in ms. */
  readonly pttlMs: number;
}

/** One hold of a semaphore or read-write lock. */
export interface SharedHolder {
  readonly hold: string;
  readonly owner: string;
  readonly fencingToken: string;
  /** Semaphore permits it takes (1 for a read-write lock). */
  readonly permits: number;
  /** "s" semaphore, "r" reader, "w" writer. */
  readonly mode: string;
  readonly entries: number;
  readonly expiresInMs: number;
}

/** One ticket in a lock's queue, head first. */
export interface QueuedWaiter {
  readonly ticket: string;
  readonly owner: string;
  readonly mode: string;
  readonly permits: number;
  /** Time before the ticket is dropped unless its waiter refreshes it. */
  readonly expiresInMs: number;
}

export interface MutexState {
  readonly holder: Holder | null;
  readonly queue: readonly QueuedWaiter[];
}

export interface SharedState {
  readonly holders: readonly SharedHolder[];
  readonly queue: readonly QueuedWaiter[];
  /** A semaphore's stored number of permits. */
  readonly limit: number | null;
}

/** Each part is null when Redis holds nothing of it. */
export interface LockState {
  readonly mutex: MutexState | null;
  readonly rw: SharedState | null;
  readonly semaphore: SharedState | null;
}

/** True when anything holds or waits for the key. */
export function isLocked(state: LockState): boolean {
  return state.mutex !== null || state.rw !== null || state.semaphore !== null;
}

/** Script calls from the CLI: one endpoint per client, with the library's deadline and fallbacks. */
const endpoints = new WeakMap<Redis | Cluster, Endpoint>();

export function endpointOf(client: Redis | Cluster): Endpoint {
  let endpoint = endpoints.get(client);
  if (!endpoint) {
    endpoint = new Endpoint(new IoredisAdapter(client as unknown as IoredisLike), { clock: systemClock, timeoutMs: 5_000 });
    endpoints.set(client, endpoint);
  }
  return endpoint;
}

/** Reads the state of `key` (every kind of lock) from one deployment. */
export async function readLockState(client: Redis | Cluster, keys: KeySpace, key: string): Promise<LockState> {
  const m = keys.exclusive(key);
  const rw = keys.shared(key, "rw");
  const sem = keys.shared(key, "sem");
  const doc = await endpointOf(client).run(scripts.inspect.call({
    lock: m.lock, queue: m.queue, tickets: m.tickets,
    rwState: rw.state, rwHolders: rw.holders, rwQueue: rw.queue, rwTickets: rw.tickets,
    semState: sem.state, semHolders: sem.holders, semQueue: sem.queue, semTickets: sem.tickets,
  }, {})) as { mutex?: RawMutex | null; rw?: RawShared | null; semaphore?: RawShared | null };
  return {
    mutex: doc.mutex ? { holder: doc.mutex.holder ?? null, queue: list(doc.mutex.queue) } : null,
    rw: shared(doc.rw),
    semaphore: shared(doc.semaphore),
  };
}

interface RawMutex { holder?: Holder | null; queue?: unknown }
interface RawShared { holders?: unknown; queue?: unknown; limit?: number | null }

/** Lua's cjson writes an empty table as {}: read anything but an array as empty. */
function list<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

function shared(raw: RawShared | null | undefined): SharedState | null {
  if (!raw) return null;
  return { holders: list(raw.holders), queue: list(raw.queue), limit: raw.limit ?? null };
}
