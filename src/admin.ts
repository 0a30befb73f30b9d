/**
 * What an operator's tool needs besides the locks: a consistent picture of everything Redis holds
 * for one key (each kind of lock, an election and a latch of that name), and a forced release of a
 * lock whose holder will not give it back. The `surelock` command is built on these two; so can a
 * dashboard or a runbook script be. They read and write the same keys as
 * `new Surelock({ redis, prefix })`, through a client the caller owns and closes.
 */
import { toAdapter, type RedisClient } from "./adapters/detect.js";
import type { RedisAdapter } from "./adapters/types.js";
import { Endpoint } from "./adapters/endpoint.js";
import { systemClock } from "./clock.js";
import { InvalidArgumentError } from "./errors.js";
import { KeySpace } from "./keys.js";
import { scripts } from "./protocol/scripts.js";
import { checkKey, checkOptions, checkPositiveInt, checkPrefix } from "./validate.js";

/** Where the locks live and how long to wait for Redis. */
export interface AdminOptions {
  /** The key namespace the locks were made under (`SurelockOptions.prefix`). Default `"surelock"`. */
  readonly prefix?: string;
  /** Longest wait for Redis's reply, in ms, before a ConnectionError. Default 5 000. */
  readonly commandTimeout?: number;
}

/** The holder of a mutex. */
export interface InspectedHolder {
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
export interface InspectedSharedHolder {
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
export interface InspectedWaiter {
  readonly ticket: string;
  readonly owner: string;
  readonly mode: string;
  readonly permits: number;
  /** Time before the ticket is dropped unless its waiter refreshes it. */
  readonly expiresInMs: number;
}

export interface InspectedMutex {
  readonly holder: InspectedHolder | null;
  readonly queue: readonly InspectedWaiter[];
}

export interface InspectedShared {
  readonly holders: readonly InspectedSharedHolder[];
  readonly queue: readonly InspectedWaiter[];
  /** A semaphore's stored number of permits. */
  readonly limit: number | null;
}

/** The hold of an election's lock: its leader, once it proclaimed itself. */
export interface InspectedLeader {
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
export interface InspectedCandidate {
  readonly ticket: string;
  readonly owner: string;
  readonly expiresInMs: number;
}

export interface InspectedElection {
  readonly holder: InspectedLeader | null;
  readonly candidates: readonly InspectedCandidate[];
}

/** A countdown latch: its count, what is left of it, and how long Redis keeps it. */
export interface InspectedLatch {
  readonly count: number;
  readonly left: number;
  readonly pttlMs: number;
}

/** Each part is null when Redis holds nothing of it. */
export interface KeyState {
  readonly mutex: InspectedMutex | null;
  readonly rw: InspectedShared | null;
  readonly semaphore: InspectedShared | null;
  readonly election: InspectedElection | null;
  readonly latch: InspectedLatch | null;
}

/** True when anything holds or waits for the key (a latch holds nothing). */
export function isLocked(state: KeyState): boolean {
  return state.mutex !== null || state.rw !== null || state.semaphore !== null || state.election !== null;
}

/** Which lock of a key a forced release ends: the mutex, both sides of a read-write lock, or a semaphore. */
export type ForceReleaseKind = "mutex" | "rw" | "semaphore";

/** Options of `forceRelease`. */
export interface ForceReleaseOptions extends AdminOptions {
  /** Which lock of the key. Default `"mutex"`. */
  readonly kind?: ForceReleaseKind;
}

/** A hold a forced release ended. */
export interface ForcedHold {
  readonly owner: string;
  /** Decimal string: tokens can exceed JSON's safe integers. */
  readonly fencingToken: string;
  readonly entries: number;
  /** Shared locks: "r" reader, "w" writer, "s" permit holder; absent for a mutex. */
  readonly mode?: string;
}

const KINDS: readonly ForceReleaseKind[] = ["mutex", "rw", "semaphore"];

/**
 * Reads everything Redis holds for `key` in one consistent picture per script: the mutex's holder
 * and queue, the read-write lock's and the semaphore's holds and queues, and the election and latch
 * of that name. In quorum mode, ask each node (the nodes may disagree; a majority decides).
 * Rejects with ConnectionError if Redis does not answer within the command timeout.
 */
export async function inspectKey(redis: RedisClient, key: string, options?: AdminOptions): Promise<KeyState> {
  const { endpoint, keys } = open(redis, options, ["prefix", "commandTimeout"]);
  checkKey("key", key);
  const m = keys.exclusive(key);
  const rw = keys.shared(key, "rw");
  const sem = keys.shared(key, "sem");
  const e = keys.exclusive(key, "election");
  const [doc, more] = await Promise.all([
    endpoint.run(scripts.inspect.call({
      lock: m.lock, queue: m.queue, tickets: m.tickets,
      rwState: rw.state, rwHolders: rw.holders, rwQueue: rw.queue, rwTickets: rw.tickets,
      semState: sem.state, semHolders: sem.holders, semQueue: sem.queue, semTickets: sem.tickets,
    }, {})) as Promise<{ mutex?: RawMutex | null; rw?: RawShared | null; semaphore?: RawShared | null }>,
    endpoint.run(scripts.inspectCoordination.call(
      { lock: e.lock, queue: e.queue, tickets: e.tickets, latch: keys.latch(key).state }, {},
    )) as Promise<{ election?: RawElection | null; latch?: InspectedLatch | null }>,
  ]);
  return {
    mutex: doc.mutex ? { holder: doc.mutex.holder ?? null, queue: list(doc.mutex.queue) } : null,
    rw: shared(doc.rw),
    semaphore: shared(doc.semaphore),
    election: more.election ? { holder: more.election.holder ?? null, candidates: list(more.election.candidates) } : null,
    latch: more.latch ?? null,
  };
}

/**
 * Ends every hold of one lock of `key` and wakes its waiters, in one script. The holders are not
 * told: each learns at its next renewal (up to a third of its ttl later), and until then two
 * processes may believe they hold the lock; fencing tokens still refuse the old holder's writes.
 * Resolves with the holds it ended (none when the lock was free). Rejects with ConnectionError if
 * Redis does not answer within the command timeout.
 */
export async function forceRelease(redis: RedisClient, key: string, options?: ForceReleaseOptions): Promise<ForcedHold[]> {
  const { endpoint, keys, o } = open(redis, options, ["prefix", "commandTimeout", "kind"]);
  checkKey("key", key);
  const kind = (o as ForceReleaseOptions).kind ?? "mutex";
  if (!KINDS.includes(kind)) throw new InvalidArgumentError("options.kind", kind, KINDS.map((k) => JSON.stringify(k)).join(", "));
  let call;
  if (kind === "mutex") {
    const k = keys.exclusive(key);
    // A mutex is its one hash: the other keys are not used.
    call = scripts.forceRelease.call({ state: k.lock, holders: k.lock, entries: k.lock, channel: k.channel }, { kind: "x", publish: endpoint.publish });
  } else {
    const k = keys.shared(key, kind === "rw" ? "rw" : "sem");
    call = scripts.forceRelease.call({ state: k.state, holders: k.holders, entries: k.entries, channel: k.channel }, { kind: "s", publish: endpoint.publish });
  }
  const doc = (await endpoint.run(call)) as { holds?: unknown };
  return Array.isArray(doc.holds) ? (doc.holds as ForcedHold[]) : [];
}

// One adapter per client, one endpoint per command timeout: an endpoint's script cache (EVALSHA)
// outlives a call, and nothing stays attached to a client once its calls are done.
const clients = new WeakMap<object, { readonly adapter: RedisAdapter; readonly endpoints: Map<number, Endpoint> }>();

function open(redis: RedisClient, options: AdminOptions | undefined, names: readonly ("prefix" | "commandTimeout" | "kind")[]): { endpoint: Endpoint; keys: KeySpace; o: AdminOptions } {
  const o = checkOptions<AdminOptions & { kind?: ForceReleaseKind }>("options", options, names);
  const prefix = o.prefix === undefined ? "surelock" : checkPrefix("options.prefix", o.prefix);
  const timeoutMs = o.commandTimeout === undefined ? 5_000 : checkPositiveInt("options.commandTimeout", o.commandTimeout, 600_000);
  let client = typeof redis === "object" && redis !== null ? clients.get(redis) : undefined;
  if (!client) {
    client = { adapter: toAdapter(redis, "redis"), endpoints: new Map() };
    clients.set(redis as object, client);
  }
  let endpoint = client.endpoints.get(timeoutMs);
  if (!endpoint) client.endpoints.set(timeoutMs, (endpoint = new Endpoint(client.adapter, { clock: systemClock, timeoutMs })));
  return { endpoint, keys: new KeySpace(prefix), o };
}

interface RawElection { holder?: InspectedLeader | null; candidates?: unknown }
interface RawMutex { holder?: InspectedHolder | null; queue?: unknown }
interface RawShared { holders?: unknown; queue?: unknown; limit?: number | null }

/** Lua's cjson writes an empty table as {}: read anything but an array as empty. */
function list<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

function shared(raw: RawShared | null | undefined): InspectedShared | null {
  if (!raw) return null;
  return { holders: list(raw.holders), queue: list(raw.queue), limit: raw.limit ?? null };
}
