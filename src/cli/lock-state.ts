/**
 * What Redis holds for one user key, read by inspect.lua in one atomic step so the picture is
 * consistent: the mutex's holder and queue, the read-write lock's and the semaphore's holds and
 * queues; and by inspect-coordination.lua, the election and the countdown latch of that name.
 * Shared by `inspect`, `list`, `leader` and `exec` (to name who holds a lock).
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

/** The hold of an election's lock: its leader, once it proclaimed itself. */
export interface ElectionHolder {
  readonly owner: string;
  readonly hold: string;
  /** False for a candidate that holds the lock but has not stored its value yet (not the leader yet). */
  readonly proclaimed: boolean;
  /** The leader's token (its lease's); decimal string. */
  readonly fencingToken: string;
  /** What it proclaimed; null for none. */
  readonly value: string | null;
  readonly pttlMs: number;
}

/** A candidate waiting in an election's line, head first. */
export interface Candidate {
  readonly ticket: string;
  readonly owner: string;
  readonly expiresInMs: number;
}

export interface ElectionState {
  readonly holder: ElectionHolder | null;
  readonly candidates: readonly Candidate[];
}

/** A countdown latch: its count, what is left of it, and how long Redis keeps it. */
export interface LatchState {
  readonly count: number;
  readonly left: number;
  readonly pttlMs: number;
}

/** Each part is null when Redis holds nothing of it. */
export interface LockState {
  readonly mutex: MutexState | null;
  readonly rw: SharedState | null;
  readonly semaphore: SharedState | null;
  readonly election: ElectionState | null;
  readonly latch: LatchState | null;
}

/** True when anything holds or waits for the key (a latch holds nothing). */
export function isLocked(state: LockState): boolean {
  return state.mutex !== null || state.rw !== null || state.semaphore !== null || state.election !== null;
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
  const e = keys.exclusive(key, "election");
  const [doc, more] = await Promise.all([
    endpointOf(client).run(scripts.inspect.call({
      lock: m.lock, queue: m.queue, tickets: m.tickets,
      rwState: rw.state, rwHolders: rw.holders, rwQueue: rw.queue, rwTickets: rw.tickets,
      semState: sem.state, semHolders: sem.holders, semQueue: sem.queue, semTickets: sem.tickets,
    }, {})) as Promise<{ mutex?: RawMutex | null; rw?: RawShared | null; semaphore?: RawShared | null }>,
    endpointOf(client).run(scripts.inspectCoordination.call(
      { lock: e.lock, queue: e.queue, tickets: e.tickets, latch: keys.latch(key).state }, {},
    )) as Promise<{ election?: RawElection | null; latch?: LatchState | null }>,
  ]);
  return {
    mutex: doc.mutex ? { holder: doc.mutex.holder ?? null, queue: list(doc.mutex.queue) } : null,
    rw: shared(doc.rw),
    semaphore: shared(doc.semaphore),
    election: more.election ? { holder: more.election.holder ?? null, candidates: list(more.election.candidates) } : null,
    latch: more.latch ?? null,
  };
}

interface RawElection { holder?: ElectionHolder | null; candidates?: unknown }

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
