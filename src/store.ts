/**
 * The lock protocol on one Redis deployment (standalone, Sentinel or Cluster): every primitive
 * talks to a store, the store runs scripts on its endpoint. The quorum store offers the same
 * operations over N independent primaries.
 */
import type { Endpoint } from "./adapters/endpoint.js";
import type { RedisSubscriber } from "./adapters/types.js";
import { slotOf, type LockKeys } from "./keys.js";
import type { Hold, LeaseStore } from "./lease.js";
import {
  LUA,
  parseAcquire,
  parseLeaseState,
  parseRelease,
  parseStates,
  type AcquireReply,
  type LeaseState,
  type ReleaseReply,
} from "./scripts/index.js";

/** How long a per-key fencing counter outlives its last acquisition (it restarts above its old value). */
const counterRetentionMs = (ttlMs: number): number => Math.max(86_400_000, ttlMs * 10);

/** A place in a lock's queue in Redis. */
export interface Ticket {
  readonly id: string;
  /** Dropped from the queue if not refreshed (by an attempt) within this many ms. */
  readonly leaseMs: number;
  /** Keep the ticket queued after taking the lock: more local waiters stand behind it. */
  readonly requeue: boolean;
}

/** Arguments of an exclusive (mutex / write-lock) attempt. */
export interface ExclusiveAttempt {
  readonly owner: string;
  readonly ttlMs: number;
  /** For write locks: how long a refused writer holds new readers back (0 for a mutex). */
  readonly writerMarkMs: number;
  /** The caller's place in the lock's queue (see acquire.lua): one per waiter in fair mode, one per local line otherwise. */
  readonly ticket?: Ticket;
}

/** Arguments of a shared (semaphore permit / read lock) attempt. */
export interface SharedAttempt {
  readonly member: string;
  readonly owner: string;
  readonly ttlMs: number;
  /** 0 for read locks (no limit besides writers). */
  readonly permits: number;
  /** Write side of a read-write lock, whose writer keeps readers out; undefined for semaphores. */
  readonly writer?: LockKeys;
}

/** The operations every store offers; the primitives use nothing else. */
export interface Store extends LeaseStore {
  readonly name: string;
  acquireExclusive(keys: LockKeys, attempt: ExclusiveAttempt): Promise<AcquireReply>;
  acquireShared(keys: LockKeys, attempt: SharedAttempt): Promise<AcquireReply>;
  leaveQueue(keys: LockKeys, waiterId: string): Promise<void>;
  renew(holds: readonly Hold[]): Promise<LeaseState[]>;
  createSubscribers(): Promise<RedisSubscriber>[];
}

export class SingleStore implements Store {
  readonly endpoint: Endpoint;
  readonly #publish: string;

  constructor(endpoint: Endpoint) {
    this.endpoint = endpoint;
    this.#publish = endpoint.adapter.cluster ? "SPUBLISH" : "PUBLISH";
  }

  get name(): string {
    return this.endpoint.name;
  }

  async acquireExclusive(keys: LockKeys, a: ExclusiveAttempt): Promise<AcquireReply> {
    const keep = counterRetentionMs(a.ttlMs);
    // A reply that arrives after we gave up on it, or a write too few replicas acknowledged
    // (with the `replicas` option), still took the lock: give it back.
    const undo = (reply: unknown): void => this.#undoExclusive(keys, a.owner, reply);
    const t = a.ticket;
    const reply = await this.endpoint.run(LUA.acquire,
      [keys.lock, keys.fence, keys.shared, keys.mark, keys.queue, keys.deadlines],
      [a.owner, a.ttlMs, keep, a.writerMarkMs, t?.id ?? "", t?.leaseMs ?? 0, t?.requeue ? "1" : "0"], undo, undo);
    return parseAcquire(reply);
  }

  async acquireShared(keys: LockKeys, a: SharedAttempt): Promise<AcquireReply> {
    const writer = a.writer ?? keys;
    const undo = (reply: unknown): void => this.#undoShared(keys, a.member, reply);
    const reply = await this.endpoint.run(LUA.acquireShared, [keys.shared, keys.fence, writer.lock, writer.mark],
      [a.member, a.ttlMs, counterRetentionMs(a.ttlMs), a.permits, a.owner], undo, undo);
    return parseAcquire(reply);
  }

  async leaveQueue(keys: LockKeys, waiterId: string): Promise<void> {
    await this.endpoint.run(LUA.leaveQueue, [keys.lock, keys.queue, keys.deadlines, keys.channel], [waiterId, this.#publish]);
  }

  async release(hold: Hold): Promise<ReleaseReply> {
    if (hold.kind === "h") {
      const reply = await this.endpoint.run(LUA.release, [hold.keys.lock, hold.keys.channel, hold.keys.queue],
        [hold.who, hold.token.toString(), this.#publish]);
      return parseRelease(reply);
    }
    const reply = await this.endpoint.run(LUA.releaseShared, [hold.renewKey, hold.keys.channel], [hold.who, this.#publish]);
    return reply === 1 ? "freed" : "gone";
  }

  async extend(hold: Hold, ttlMs: number): Promise<LeaseState> {
    if (hold.kind === "h") {
      const reply = await this.endpoint.run(LUA.extend, [hold.renewKey], [hold.who, hold.token.toString(), ttlMs]);
      return parseLeaseState("extend", reply);
    }
    const [state] = await this.#renewSlot([hold], [ttlMs]);
    return state ?? "gone";
  }

  async check(hold: Hold): Promise<LeaseState> {
    const reply = await this.endpoint.run(LUA.isHeld, [hold.renewKey], [hold.kind, hold.who, hold.token.toString()]);
    return parseLeaseState("is-held", reply);
  }

  /**
   * One renew-batch call for all holds; in a Cluster one per slot (a script's keys must share
   * one), all sent at once. With `replicas`, each call is followed by WAIT on its node, and a
   * shortfall rejects: the watchdog then treats the tick as failed, not the leases as lost.
   */
  async renew(holds: readonly Hold[]): Promise<LeaseState[]> {
    if (!this.endpoint.adapter.cluster) return this.#renewSlot(holds);
    const bySlot = new Map<number, number[]>();
    holds.forEach((hold, i) => {
      const slot = slotOf(hold.renewKey);
      const group = bySlot.get(slot);
      if (group) group.push(i);
      else bySlot.set(slot, [i]);
    });
    const out: LeaseState[] = new Array<LeaseState>(holds.length);
    await Promise.all(
      [...bySlot.values()].map(async (indexes) => {
        const states = await this.#renewSlot(indexes.map((i) => holds[i] as Hold));
        indexes.forEach((index, j) => { out[index] = states[j] as LeaseState; });
      }),
    );
    return out;
  }

  createSubscribers(): Promise<RedisSubscriber>[] {
    return [this.endpoint.adapter.createSubscriber()];
  }

  async #renewSlot(holds: readonly Hold[], ttls?: readonly number[]): Promise<LeaseState[]> {
    const keys = holds.map((h) => h.renewKey);
    const args: (string | number)[] = [];
    holds.forEach((h, i) => args.push(h.kind, h.who, h.token.toString(), ttls?.[i] ?? h.ttlMs));
    return parseStates(await this.endpoint.run(LUA.renewBatch, keys, args), holds.length);
  }

  #undoExclusive(keys: LockKeys, owner: string, reply: unknown): void {
    let parsed: AcquireReply;
    try {
      parsed = parseAcquire(reply);
    } catch {
      return;
    }
    if (parsed.status === "busy") return;
    this.endpoint
      .run(LUA.release, [keys.lock, keys.channel, keys.queue], [owner, parsed.token.toString(), this.#publish])
      .catch(() => { /* it expires after its ttl */ });
  }

  #undoShared(keys: LockKeys, member: string, reply: unknown): void {
    if (!Array.isArray(reply) || reply[0] !== 1) return;
    this.endpoint.run(LUA.releaseShared, [keys.shared, keys.channel], [member, this.#publish]).catch(() => {});
  }
}
