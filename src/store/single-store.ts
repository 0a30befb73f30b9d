/**
 * The lock protocol on one Redis deployment (standalone, Sentinel or Cluster): each operation is
 * one script call through the endpoint, the call of the lock's family (src/protocol/); a keep-alive
 * batch is one call per slot and chunk (keepalive-batch.ts). What this store adds is the handling
 * of late replies: what an attempt whose answer came too late had taken is given back, unless a
 * newer request of the same identity answers for it.
 */
import type { Endpoint } from "../adapters/endpoint.js";
import type { RedisSubscriber } from "../adapters/types.js";
import { publish } from "../diagnostics.js";
import { ConnectionError } from "../errors.js";
import { VACANCY } from "../protocol/channel.js";
import { countDownCall, proclaimCall, readLatchCall, readLeaderCall } from "../protocol/coordination.js";
import * as exclusive from "../protocol/exclusive.js";
import { acquireResult, checkCall, giveBackOf, raiseCall, type CallOptions, type ReleaseReply } from "../protocol/holds.js";
import * as multi from "../protocol/multi.js";
import * as shared from "../protocol/shared.js";
import { Attempts } from "./attempts.js";
import { keepaliveInBatches } from "./keepalive-batch.js";
import type {
  AcquireCall, AcquireResult, CountDownRequest, Grant, HoldRef, HoldState, KeepaliveItem, KeepaliveResult, LatchReply, LatchRequest, LeaderReply,
  LockTarget, ProclaimRequest, ReleaseResult, SharedTarget, SingleTarget, Store,
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
  /** What every call on this deployment carries. */
  readonly #wire: CallOptions;
  /** What happens to a late or lost reply, per entry id (= hold id when fresh). */
  readonly #attempts = new Attempts();

  constructor(endpoint: Endpoint, o: SingleStoreOptions) {
    this.endpoint = endpoint;
    this.grants = o.grants;
    this.#wire = {
      keep: o.keepMs, window: o.replayWindowMs, grant: o.grants ? "1" : "0", publish: endpoint.publish, ordered: o.ordered === true,
      countsIds: o.countsIds === true,
    };
  }

  get name(): string {
    return this.endpoint.name;
  }

  async acquire(call: AcquireCall, stop?: AbortSignal): Promise<AcquireResult> {
    const { entry } = call;
    // Validity counts from before this wait (the caller read its send instant): only shorter.
    const back = this.#attempts.givingBack(entry);
    if (back !== undefined) {
      await back;
      // Its caller gave up meanwhile (and so gave this identity back again): not sent at all, or
      // it would take or queue something for nobody, behind that give-back.
      stop?.throwIfAborted();
      if (this.#attempts.givenBackSince(entry, back)) {
        throw new ConnectionError(`acquire of ${call.target.keys.key}: given back before it could be sent`);
      }
    }
    const attempt = this.#attempts.sent(entry);
    // A reply that comes after we gave up on it still took (or queued) something: give it back,
    // unless the same identity was attempted or given back since (Attempts.late).
    const undo = (): Promise<void> | undefined => (this.#attempts.late(entry, attempt) ? this.#abandonQuietly(call) : undefined);
    // The script call is awaited here, not in a helper of its own: one promise fewer per acquire.
    const { target } = call;
    const result = target.family === "multi"
      ? multi.acquireResult(target, await this.endpoint.run(multi.acquireCall(target.keys, call, this.#wire), undo))
      : acquireResult(target, await this.endpoint.run(target.family === "exclusive"
        ? exclusive.acquireCall(target.keys, call, this.#wire) : shared.acquireCall(target, call, this.#wire), undo));
    this.#attempts.answered(entry, attempt);
    return result;
  }

  abandon(call: AcquireCall): Promise<void> {
    return this.#attempts.giveBack(call.entry, () => this.#giveBack(call));
  }

  /** Leaves the line (giving back a hold founded for the ticket), then gives back an entry added to a hold. */
  async #giveBack(call: AcquireCall): Promise<void> {
    const { leave, release } = giveBackOf(call);
    if (leave) await this.#leave(call.target, call.ask.hold);
    if (release !== undefined) await this.release({ target: call.target, hold: release, token: 0n }, call.entry);
  }

  async stepAside(call: AcquireCall): Promise<void> {
    const { target, ask } = call;
    // Only a mutex has an ordered line; any other attempt gives back all it may have obtained.
    if (target.family !== "exclusive" || !this.#wire.ordered || ask.order === undefined || ask.ticketLeaseMs === 0) return this.abandon(call);
    this.#attempts.settle(call.entry);
    await this.endpoint.run(exclusive.stepAsideCall(target.keys, ask, ask.order, this.#wire));
  }

  async release(ref: HoldRef, entry: string, here = ""): Promise<ReleaseResult> {
    const t = ref.target;
    const reply: ReleaseReply = await this.endpoint.run(t.family === "multi" ? multi.releaseCall(t.keys, ref.hold, entry, this.#wire)
      : t.family === "exclusive" ? exclusive.releaseCall(t.keys, ref, entry, here, this.#wire) : shared.releaseCall(t.keys, ref, entry, this.#wire));
    if (reply.status === "freed" && reply.grants.length === 0) this.#announceVacancy(ref.target);
    return reply.status === "held" ? { status: "held" } : reply;
  }

  async setPermits(target: SharedTarget, limit: number, id: string): Promise<readonly Grant[]> {
    return shared.grantsOf(await this.endpoint.run(shared.setPermitsCall(target.keys, limit, id, this.#wire)));
  }

  async keepalive(items: readonly KeepaliveItem[]): Promise<KeepaliveResult[]> {
    // A ticket's refresh is a newer request of its identity: a late attempt's reply before it gives nothing back.
    const marks = this.#attempts.refreshing(items);
    const results = await keepaliveInBatches(items, this.endpoint.adapter.cluster, (call) => this.endpoint.run(call), this.#wire.ordered, this.#wire.window);
    this.#attempts.refreshed(marks);
    return results;
  }

  async check(ref: HoldRef): Promise<HoldState> {
    const target = ref.target;
    if (target.family === "multi") {
      return multi.combineStates(await Promise.all(multi.checkCalls(target.keys, ref.hold).map((call) => this.endpoint.run(call))));
    }
    return this.endpoint.run(checkCall(target, ref.hold));
  }

  async raise(target: SingleTarget, chosen: bigint, hold: string): Promise<void> {
    await this.endpoint.run(raiseCall(target, chosen, hold, this.#wire));
  }

  proclaim(req: ProclaimRequest): Promise<HoldState> {
    return this.endpoint.run(proclaimCall(req, this.#wire));
  }

  readLeader(_name: string, lock: string): Promise<LeaderReply | null> {
    return this.endpoint.run(readLeaderCall(lock));
  }

  countDown(req: CountDownRequest): Promise<LatchReply> {
    return this.endpoint.run(countDownCall(req, this.#wire));
  }

  readLatch(req: LatchRequest): Promise<LatchReply> {
    return this.endpoint.run(readLatchCall(req, this.#wire));
  }

  subscribers(): Promise<RedisSubscriber>[] {
    return [this.endpoint.adapter.createSubscriber()];
  }

  async #leave(target: LockTarget, ticket: string): Promise<void> {
    if (target.family === "multi") {
      await this.endpoint.run(multi.leaveCall(target.keys, ticket, this.#wire));
    } else if (target.family === "exclusive") {
      // A hold founded for the ticket was given back: the lock may be free now.
      if (exclusive.leftHold(await this.endpoint.run(exclusive.leaveCall(target.keys, ticket, this.#wire)))) this.#announceVacancy(target);
    } else {
      await this.endpoint.run(shared.leaveCall(target.keys, ticket, this.#wire));
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
    this.endpoint.command([this.endpoint.publish, channel, VACANCY], channel).catch((error: unknown) => {
      publish("error", () => ({ key: target.keys.key, operation: "announce", error: error as Error }));
    });
  }

  #abandonQuietly(call: AcquireCall): Promise<void> {
    return this.abandon(call).catch((error: unknown) => {
      // It expires by itself: the hold after its ttl, the ticket after its lease.
      publish("error", () => ({ key: call.target.keys.key, operation: "abandon", error: error as Error }));
    });
  }
}
