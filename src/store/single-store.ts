/**
 * The lock protocol on one Redis deployment (standalone, Sentinel or Cluster): each operation is
 * one script call through the endpoint; a keep-alive batch is one call per slot and chunk
 * (keepalive-batch.ts).
 */
import type { Endpoint } from "../adapters/endpoint.js";
import type { RedisSubscriber } from "../adapters/types.js";
import { publish } from "../diagnostics.js";
import { ConnectionError } from "../errors.js";
import { scripts, type AcquireReply, type Grant, type HoldState, type LatchReply, type LeaderReply, type ReleaseReply, type ScriptCall } from "../scripts/index.js";
import { keepaliveInBatches } from "./keepalive-batch.js";
import { acquireMultiCall, combineStates, leaveMultiCall, multiResult, releaseMultiCall, type HandOverOptions } from "./multi.js";
import type {
  AcquireCall, AcquireResult, CountDownRequest, HoldRef, KeepaliveItem, KeepaliveResult, LatchRequest, LockTarget, ProclaimRequest, ReleaseResult,
  SharedTarget, SingleTarget, Store,
} from "./types.js";

export interface SingleStoreOptions {
  /** How long a freed lock's counter outlives its last hold, ms. */
  readonly keepMs: number;
  /** How long a released shared hold's tombstone answers replays, ms. */
  readonly replayWindowMs: number;
  /** Whether a release grants the lock to the queue's head (not in quorum mode, not with replicas). */
  readonly grants: boolean;
  /** Quorum mode: a mutex's waiters stand in a line ordered by `Ask.order` (lib/queue.lua). */
  readonly ordered?: boolean;
  /** Quorum mode: a latch lists the ids it counted, so that a read over nodes counts distinct ones. */
  readonly countsIds?: boolean;
}

export class SingleStore implements Store {
  readonly endpoint: Endpoint;
  readonly grants: boolean;
  readonly #o: SingleStoreOptions;
  readonly #grant: "0" | "1";
  /**
   * The newest request sent per entry id (= hold id when fresh), while an attempt's reply may
   * come late: an attempt's number, or the negated number of a refresh of the ticket (a waiter's
   * ticket is its hold id), sent behind an attempt still unanswered.
   */
  readonly #newest = new Map<string, number>();
  /**
   * Give-backs on the wire per entry id. One is two scripts (leave the line, then release the
   * entry), the second sent once the first is answered: a newer attempt of that identity is sent
   * only after the whole give-back settled, else it could run between the two, find its entry (a
   * replay), answer "entered", and have the release take that entry out (torture seed 45).
   */
  readonly #givingBack = new Map<string, Promise<void>>();
  #attempts = 0;

  constructor(endpoint: Endpoint, o: SingleStoreOptions) {
    this.endpoint = endpoint;
    this.#o = o;
    this.grants = o.grants;
    this.#grant = o.grants ? "1" : "0";
  }

  get name(): string {
    return this.endpoint.name;
  }

  async acquire(call: AcquireCall, stop?: AbortSignal): Promise<AcquireResult> {
    const { entry } = call;
    // Validity counts from before this wait (the caller read its send instant): only shorter.
    const back = this.#givingBack.get(entry);
    if (back !== undefined) {
      await back;
      // Its caller gave up meanwhile (and so gave this identity back again): not sent at all, or
      // it would take or queue something for nobody, behind that give-back.
      stop?.throwIfAborted();
      const again = this.#givingBack.get(entry);
      if (again !== undefined && again !== back) {
        throw new ConnectionError(`acquire of ${call.target.keys.key}: given back before it could be sent`);
      }
    }
    const attempt = ++this.#attempts;
    this.#newest.set(entry, attempt);
    // A reply that comes after we gave up on it still took (or queued) something: give it back,
    // unless the same identity was attempted or given back since. A newer attempt ran after this
    // one, found its state (a replay) and answers for it; a give-back sent now would land behind
    // it and delete the hold it counts (torture seed 3 on quorum).
    const undo = (): Promise<void> | undefined => {
      if (this.#newest.get(entry) !== attempt) return undefined;
      this.#newest.delete(entry);
      return this.#abandonQuietly(call);
    };
    // The script call is awaited here, not in a helper of its own: one promise fewer per acquire.
    const { target } = call;
    const result = target.family === "multi"
      ? multiResult(target, await this.endpoint.run(acquireMultiCall(target.keys, call, this.#handOver()), undo))
      : acquired(target, await this.endpoint.run(this.#acquireCall(target, call), undo));
    // Answered in time: nothing to give back late. (Unanswered, it stays: its reply may come.)
    const newest = this.#newest.get(entry);
    if (newest === attempt || (newest !== undefined && newest < 0)) this.#newest.delete(entry);
    return result;
  }

  #acquireCall(target: SingleTarget, call: AcquireCall): ScriptCall<AcquireReply> {
    const { ask, entry, join } = call;
    if (target.family === "exclusive") {
      const k = target.keys;
      return scripts.acquire.call(
        { lock: k.lock, queue: k.queue, tickets: k.tickets },
        { owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, join, ticketLease: ask.ticketLeaseMs, window: this.#o.replayWindowMs },
        this.#o.ordered && ask.order !== undefined ? { args: [ask.order] } : undefined,
      );
    }
    const k = target.keys;
    return scripts.acquireShared.call(
      { state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets },
      {
        owner: ask.owner, hold: ask.hold, entry, ttl: ask.ttlMs, mode: ask.mode, permits: ask.permits, limit: target.limit,
        join, ticketLease: ask.ticketLeaseMs, keep: this.#o.keepMs,
      },
    );
  }

  abandon(call: AcquireCall): Promise<void> {
    // Sent behind every attempt of this identity: no late reply needs a give-back of its own.
    const { entry } = call;
    this.#newest.delete(entry);
    const giving = this.#giveBack(call);
    const before = this.#givingBack.get(entry);
    const settled = Promise.allSettled([before, giving]).then(() => {
      if (this.#givingBack.get(entry) === settled) this.#givingBack.delete(entry);
    });
    this.#givingBack.set(entry, settled);
    return giving;
  }

  /** Leaves the line (giving back a hold founded for the ticket), then gives back an entry added to a hold. */
  async #giveBack(call: AcquireCall): Promise<void> {
    if (call.join === "" || call.join === "*") {
      // Leaving the queue also gives back a hold founded for the ticket (= the hold's id).
      await this.#leave(call.target, call.ask.hold);
    }
    if (call.join !== "") {
      // An entry that may have been added to a hold (a re-entry, or a join by owner: '*' lets the
      // script find the hold by the entry); a nested read founds a hold of its own (its `join`
      // names the hold it was let in under), whose id is its entry's.
      const nestedRead = call.target.family === "shared" && call.ask.mode === "r" && call.join !== "*";
      await this.release({ target: call.target, hold: nestedRead ? call.ask.hold : call.join, token: 0n }, call.entry);
    }
  }

  async stepAside(call: AcquireCall): Promise<void> {
    const { target, ask } = call;
    // Only a mutex has an ordered line; any other attempt gives back all it may have obtained.
    if (target.family !== "exclusive" || !this.#o.ordered || ask.order === undefined || ask.ticketLeaseMs === 0) return this.abandon(call);
    this.#newest.delete(call.entry);
    const k = target.keys;
    await this.endpoint.run(scripts.stepAside.call(
      { lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { ticket: ask.hold, order: ask.order, ticketLease: ask.ticketLeaseMs, ttl: ask.ttlMs, owner: ask.owner, keep: this.#o.keepMs, publish: this.endpoint.publish },
    ));
  }

  async release(ref: HoldRef, entry: string, here = ""): Promise<ReleaseResult> {
    let reply: ReleaseReply;
    if (ref.target.family === "multi") {
      reply = await this.endpoint.run(releaseMultiCall(ref.target.keys, ref.hold, entry, this.#handOver()));
    } else if (ref.target.family === "exclusive") {
      const k = ref.target.keys;
      reply = await this.endpoint.run(scripts.release.call(
        { lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel, released: k.released },
        {
          hold: ref.hold, entry, token: ref.token.toString(), keep: this.#o.keepMs, window: this.#o.replayWindowMs,
          grant: this.#grant, publish: this.endpoint.publish, here,
        },
      ));
    } else {
      const k = ref.target.keys;
      reply = await this.endpoint.run(scripts.releaseShared.call(
        { state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
        { hold: ref.hold, entry, window: this.#o.replayWindowMs, keep: this.#o.keepMs, grant: this.#grant, publish: this.endpoint.publish },
      ));
    }
    if (reply.status === "freed" && reply.grants.length === 0) this.#announceVacancy(ref.target);
    return reply.status === "held" ? { status: "held" } : reply;
  }

  async setPermits(target: SharedTarget, limit: number, id: string): Promise<readonly Grant[]> {
    const k = target.keys;
    const reply = await this.endpoint.run(scripts.setPermits.call(
      { state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
      { limit, id, window: this.#o.replayWindowMs, keep: this.#o.keepMs, grant: this.#grant, publish: this.endpoint.publish },
    ));
    return reply.status === "set" ? reply.grants : [];
  }

  async keepalive(items: readonly KeepaliveItem[]): Promise<KeepaliveResult[]> {
    // A refresh sent behind an attempt whose reply is late is a newer request of that identity:
    // it may find the hold that attempt founded for the ticket and report it granted, which the
    // waiter then counts; a give-back triggered by the late reply would run after it and take
    // that hold away. So the late reply gives nothing back: the waiter takes the grant, attempts
    // again (a replay), or gives back all of it when its wait ends.
    const marks = this.#newest.size === 0 ? undefined : this.#markRefreshes(items);
    const results = await keepaliveInBatches(items, this.endpoint.adapter.cluster, (call) => this.endpoint.run(call), this.#o.ordered === true, this.#o.replayWindowMs);
    // Answered: every reply sent before the refreshes came already, none can come late.
    if (marks) for (const [entry, mark] of marks) if (this.#newest.get(entry) === mark) this.#newest.delete(entry);
    return results;
  }

  #markRefreshes(items: readonly KeepaliveItem[]): [string, number][] {
    const marks: [string, number][] = [];
    for (const item of items) {
      if (item.kind !== "ticket" || !this.#newest.has(item.ask.hold)) continue;
      const mark = -++this.#attempts;
      this.#newest.set(item.ask.hold, mark);
      marks.push([item.ask.hold, mark]);
    }
    return marks;
  }

  async check(ref: HoldRef): Promise<HoldState> {
    const target = ref.target;
    if (target.family === "multi") {
      const states = target.keys.each.map((k) => this.endpoint.run(scripts.check.call({ key: k.lock }, { kind: "x", hold: ref.hold })));
      return combineStates(await Promise.all(states));
    }
    const key = target.family === "exclusive" ? target.keys.lock : target.keys.holders;
    return this.endpoint.run(scripts.check.call({ key }, { kind: target.family === "exclusive" ? "x" : "s", hold: ref.hold }));
  }

  async raise(target: SingleTarget, chosen: bigint, hold: string): Promise<void> {
    const exclusive = target.family === "exclusive";
    const hash = exclusive ? target.keys.lock : target.keys.state;
    await this.endpoint.run(scripts.raiseFence.call({ hash }, { chosen: chosen.toString(), keep: this.#o.keepMs, kind: exclusive ? "x" : "s", hold }));
  }

  proclaim(req: ProclaimRequest): Promise<HoldState> {
    return this.endpoint.run(scripts.proclaim.call(
      { lock: req.keys.lock, channel: req.keys.channel },
      {
        hold: req.hold, token: req.token.toString(), value: req.value ?? "", has: req.value === null ? "0" : "1",
        // One node is every majority there is.
        publish: this.endpoint.publish, seq: String(req.seq), kept: req.kept === false ? "0" : "1",
      },
    ));
  }

  readLeader(_name: string, lock: string): Promise<LeaderReply | null> {
    return this.endpoint.run(scripts.readLeader.call({ lock }, {}));
  }

  countDown(req: CountDownRequest): Promise<LatchReply> {
    return this.endpoint.run(scripts.countDown.call(
      { latch: req.keys.state, channel: req.keys.channel },
      { id: req.id, count: req.count, ttl: req.ttlMs, publish: this.endpoint.publish },
      this.#latchIds(),
    ));
  }

  readLatch(req: LatchRequest): Promise<LatchReply> {
    return this.endpoint.run(scripts.readLatch.call({ latch: req.keys.state }, { count: req.count }, this.#latchIds()));
  }

  #latchIds(): { args: string[] } | undefined {
    return this.#o.countsIds ? { args: ["1"] } : undefined;
  }

  subscribers(): Promise<RedisSubscriber>[] {
    return [this.endpoint.adapter.createSubscriber()];
  }

  async #leave(target: LockTarget, ticket: string): Promise<void> {
    const common = { keep: this.#o.keepMs, grant: this.#grant, publish: this.endpoint.publish };
    if (target.family === "multi") {
      await this.endpoint.run(leaveMultiCall(target.keys, ticket, this.#handOver()));
    } else if (target.family === "exclusive") {
      const k = target.keys;
      const left = await this.endpoint.run(scripts.leaveQueue.call({ lock: k.lock, queue: k.queue, tickets: k.tickets, channel: k.channel }, { ticket, ...common }));
      // A hold founded for the ticket was given back: the lock may be free now.
      if (left === 2) this.#announceVacancy(target);
    } else {
      const k = target.keys;
      await this.endpoint.run(scripts.leaveQueueShared.call(
        { state: k.state, holders: k.holders, entries: k.entries, queue: k.queue, tickets: k.tickets, channel: k.channel },
        { ticket, window: this.#o.replayWindowMs, ...common },
      ));
    }
  }

  /**
   * Says on the lock's channel that it was freed with nobody to grant it to, when its watchers want
   * to know (an election's observers). Sent after the release on the same connection, so it arrives
   * after the release took effect; not waited for: a lost one only delays the watchers.
   */
  #announceVacancy(target: LockTarget): void {
    if (target.family !== "exclusive" || !target.announce) return;
    const channel = target.keys.channel;
    this.endpoint.command([this.endpoint.publish, channel, "e"], channel).catch((error: unknown) => {
      publish("error", () => ({ key: target.keys.key, operation: "announce", error: error as Error }));
    });
  }

  #handOver(): HandOverOptions {
    return { keep: this.#o.keepMs, window: this.#o.replayWindowMs, grant: this.#grant, publish: this.endpoint.publish };
  }

  #abandonQuietly(call: AcquireCall): Promise<void> {
    return this.abandon(call).catch((error: unknown) => {
      // It expires by itself: the hold after its ttl, the ticket after its lease.
      publish("error", () => ({ key: call.target.keys.key, operation: "abandon", error: error as Error }));
    });
  }
}

/** An acquire script's reply as the store's result. */
function acquired(target: SingleTarget, reply: AcquireReply): AcquireResult {
  if (reply.status === "busy" || reply.status === "gone" || reply.status === "conflict") return reply;
  return { status: reply.status, ref: { target, hold: reply.hold, token: reply.token }, pttlMs: reply.pttlMs, leaseToken: reply.leaseToken };
}
