/**
 * Quorum (Redlock) mode: the store's operations over N independent primaries. An acquisition
 * counts only with N/2+1 nodes and while its validity (ttl - elapsed - drift, measured from the
 * moment the attempt was sent; the primitive checks it) lasts. A failed attempt is undone on
 * every node that said yes before the caller hears "busy"; nodes whose answer came too late
 * undo it as it arrives (see SingleStore), the rest expire after the ttl.
 *
 * Fencing tokens form a quorum register: each node's counter issues a token with the acquire,
 * the lease takes the largest, and nodes that issued a smaller one are raised to it before the
 * lease is handed out. Any later majority shares a node with this one, so its token is larger.
 * While all nodes agree (the usual case) that costs no extra round trip.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisSubscriber } from "../adapters/types.js";
import { now } from "../clock.js";
import { QuorumError } from "../errors.js";
import type { LockKeys } from "../keys.js";
import type { Hold } from "../lease.js";
import { LUA, type AcquireReply, type LeaseState, type ReleaseReply } from "../scripts/index.js";
import type { ExclusiveAttempt, SharedAttempt, SingleStore, Store } from "../store.js";
import { NodeSubscriber } from "./node-subscriber.js";
import { fanOut, fanOutUntil, majorityOf, outcomes, type Vote } from "./votes.js";

/**
 * After a split vote (some nodes for us, some for a competitor, nobody with a majority) every
 * contender undoes its part and pauses for a random time before it tries again, so they do not
 * collide again. The pause scales with the attempt's round trip, with a floor for fast networks.
 */
const splitPauseMs = (attemptMs: number): number => Math.random() * Math.max(20, 3 * attemptMs);

/**
 * When too few nodes answered to decide (a blip: a timeout, a reconnect), the question is asked
 * again this many times, after a split pause, before QuorumError: a majority that is really down
 * still fails within a few per-node timeouts.
 */
const QUORUM_RETRIES = 2;

/** How long a fencing counter outlives its last use (as in single mode). */
const counterRetentionMs = (ttlMs: number): number => Math.max(86_400_000, ttlMs * 10);

/** One node that said yes to an acquire. */
interface Yes {
  readonly node: SingleStore;
  readonly reply: Extract<AcquireReply, { token: bigint }>;
}

/** How one kind of acquisition is undone and how its node's counter is raised. */
interface Undo {
  /** Gives the acquisition back on `node`; `tokens` are the tokens its hash may carry there. */
  undo(node: SingleStore, tokens: readonly bigint[]): Promise<unknown>;
  /** Raises `node`'s counter to `chosen`; resolves true if the node still holds it for us. */
  raise(node: SingleStore, mine: bigint, chosen: bigint): Promise<boolean>;
}

/** What earlier release calls of one hold left behind when they could not reach a majority. */
interface PartialRelease {
  /** Nodes that gave it back, with their answer (not asked again). */
  readonly done: Map<SingleStore, ReleaseReply>;
  /** Nodes whose answer was lost: the release may have been applied there. */
  readonly maybe: Set<SingleStore>;
}

export class QuorumStore implements Store {
  readonly nodes: readonly SingleStore[];
  readonly #majority: number;
  readonly #partial = new WeakMap<Hold, PartialRelease>();

  constructor(nodes: readonly SingleStore[]) {
    this.nodes = nodes;
    this.#majority = majorityOf(nodes.length);
  }

  get name(): string {
    return this.nodes.map((n) => n.name).join(",");
  }

  acquireExclusive(keys: LockKeys, a: ExclusiveAttempt): Promise<AcquireReply> {
    return this.#acquire(keys, (n) => n.acquireExclusive(keys, a), {
      // Pipelined on one connection, in order: at most one of the tokens matches the hash.
      undo: (node, tokens) => Promise.all(tokens.map((token) =>
        node.endpoint.run(LUA.release, [keys.lock, keys.channel, keys.queue], [a.owner, token.toString(), publishOf(node)]))),
      raise: async (node, mine, chosen) => 1 === await node.endpoint.run(LUA.raiseFence, [keys.lock, keys.fence],
        [a.owner, mine.toString(), chosen.toString(), counterRetentionMs(a.ttlMs)]),
    });
  }

  acquireShared(keys: LockKeys, a: SharedAttempt): Promise<AcquireReply> {
    return this.#acquire(keys, (n) => n.acquireShared(keys, a), {
      undo: (node) => node.endpoint.run(LUA.releaseShared, [keys.shared, keys.channel], [a.member, publishOf(node)]),
      // Shared holders are zset members without a token: only the counter is raised. The script
      // also looks at a holder hash; `keys.lock` is one (the write side of a read-write lock) or
      // absent (a semaphore), and no owner is "", so it never changes a hash here.
      raise: async (node, mine, chosen) => {
        await node.endpoint.run(LUA.raiseFence, [keys.lock, keys.fence], ["", mine.toString(), chosen.toString(), counterRetentionMs(a.ttlMs)]);
        return true;
      },
    });
  }

  /** One attempt on all nodes; asked again (whole) if too few nodes answered to ever win. */
  async #acquire(keys: LockKeys, op: (node: SingleStore) => Promise<AcquireReply>, how: Undo): Promise<AcquireReply> {
    for (let round = 0; ; round++) {
      const startedAt = now();
      // The usual case settles with the fastest majority: N/2+1 yes votes carrying one token (no
      // write-back needed). A slower node that also said yes keeps the lock if its token is that
      // one (its hash then matches the lease), and gives it back otherwise.
      let agreed: bigint | undefined;
      const votes = await fanOutUntil(this.nodes, op, (sofar) => {
        const tokens = sofar.flatMap((v) => (v.ok && v.value.status !== "busy" ? [v.value.token] : []));
        const first = tokens[0];
        if (tokens.length < this.#majority || first === undefined || tokens.some((t) => t !== first)) return false;
        agreed = first;
        return true;
      }, (vote) => {
        if (vote.ok && vote.value.status !== "busy" && vote.value.token !== agreed) {
          void how.undo(vote.node, [vote.value.token]).catch(() => {});
        }
      });
      try {
        return await this.#settle(keys, votes, startedAt, how);
      } catch (error) {
        if (!(error instanceof QuorumError) || round >= QUORUM_RETRIES) throw error;
        await sleep(splitPauseMs(now() - startedAt));
      }
    }
  }

  async #settle(keys: LockKeys, votes: Vote<AcquireReply>[], startedAt: number, how: Undo): Promise<AcquireReply> {
    const yes: Yes[] = votes.flatMap((v) => (v.ok && v.value.status !== "busy" ? [{ node: v.node, reply: v.value }] : []));
    if (yes.length < this.#majority) {
      await this.#undoAll(yes.map((y) => ({ node: y.node, tokens: [y.reply.token] })), how);
      const failed = votes.filter((v) => !v.ok).length;
      if (votes.length - failed < this.#majority) {
        // Not enough nodes answered to ever win: fail fast rather than wait.
        throw new QuorumError(keys.key, "acquire", outcomes(votes, (r) => (r.status === "busy" ? "held by another owner" : undefined)));
      }
      if (yes.length > 0) {
        await sleep(splitPauseMs(now() - startedAt));
        return { status: "busy", retryInMs: 0 };
      }
      // Everyone answering holds it elsewhere: wait until enough of those leases would have run out.
      const busy = votes.flatMap((v) => (v.ok && v.value.status === "busy" ? [v.value.retryInMs] : [])).sort((x, y) => x - y);
      return { status: "busy", retryInMs: busy[this.#majority - 1] ?? busy[0] ?? 0 };
    }
    let chosen = 0n;
    for (const y of yes) if (y.reply.token > chosen) chosen = y.reply.token;
    const behind = yes.filter((y) => y.reply.token !== chosen);
    if (behind.length > 0) {
      const raised = await Promise.all(behind.map((b) => how.raise(b.node, b.reply.token, chosen).catch(() => false)));
      const refused = behind.filter((_, i) => !raised[i]);
      if (yes.length - refused.length < this.#majority) {
        // A raise that failed may still have been applied: its node's hash may carry either token.
        await this.#undoAll(yes.map((y) => ({ node: y.node, tokens: y.reply.token === chosen ? [chosen] : [y.reply.token, chosen] })), how);
        await sleep(splitPauseMs(now() - startedAt));
        return { status: "busy", retryInMs: 0 };
      }
      // Nodes that kept their own token do not count for this lease: free them for others.
      await this.#undoAll(refused.map((r) => ({ node: r.node, tokens: [r.reply.token] })), how);
    }
    const reentered = yes.filter((y) => y.reply.status === "reentered").length >= this.#majority;
    return { status: reentered ? "reentered" : "acquired", token: chosen };
  }

  /** Undoes an attempt on the given nodes; waits for them (each bounded by its timeout), never throws. */
  async #undoAll(targets: readonly { node: SingleStore; tokens: readonly bigint[] }[], how: Undo): Promise<void> {
    // An undo that did not get through expires with the ttl.
    await Promise.all(targets.map((t) => how.undo(t.node, t.tokens).catch(() => {})));
  }

  async leaveQueue(keys: LockKeys, waiterId: string): Promise<void> {
    await fanOut(this.nodes, (n) => n.leaveQueue(keys, waiterId));
  }

  /**
   * Sent to every node; done when a majority gave it back. A call that cannot reach a majority
   * throws QuorumError, yet it was applied wherever it arrived: a retry does not ask again the
   * nodes that gave it back, and counts "gone" from a node whose earlier answer was lost as
   * given back, so a retry after a partition does not report the lease as lost.
   */
  async release(hold: Hold): Promise<ReleaseReply> {
    const state = this.#partial.get(hold) ?? { done: new Map<SingleStore, ReleaseReply>(), maybe: new Set<SingleStore>() };
    const gaveBack = (r: ReleaseReply): boolean => r === "freed" || r === "decremented";
    const votes = await this.#ask(async (node) => {
      const done = state.done.get(node);
      if (done !== undefined) return done;
      let reply: ReleaseReply;
      try {
        reply = await node.release(hold);
      } catch (error) {
        state.maybe.add(node);
        throw error;
      }
      // Nothing there after a release whose answer we lost: that release gave it back.
      if (reply === "gone" && state.maybe.has(node)) reply = "freed";
      if (gaveBack(reply)) {
        state.done.set(node, reply);
        state.maybe.delete(node);
      }
      return reply;
    }, gaveBack);
    const mine = votes.filter((v) => v.ok && gaveBack(v.value));
    if (mine.length >= this.#majority) {
      this.#partial.delete(hold);
      return mine.some((v) => v.ok && v.value === "decremented") ? "decremented" : "freed";
    }
    if (this.#undecided(votes, gaveBack)) {
      this.#partial.set(hold, state);
      throw this.#quorumError(hold, votes, "release", gaveBack);
    }
    this.#partial.delete(hold);
    const taken = votes.filter((v) => v.ok && v.value === "taken").length;
    return taken >= this.#majority ? "taken" : "gone";
  }

  async extend(hold: Hold, ttlMs: number): Promise<LeaseState> {
    return this.#lease(hold, "extend", (n) => n.extend(hold, ttlMs));
  }

  async check(hold: Hold): Promise<LeaseState> {
    return this.#lease(hold, "isHeld", (n) => n.check(hold));
  }

  /**
   * One renew-batch call per node; a lease stays held while a majority renews it. Fewer than a
   * majority answering is an error (the watchdog retries; the lease's validity decides); a lease
   * a majority of the answers does not confirm is reported gone.
   */
  async renew(holds: readonly Hold[]): Promise<LeaseState[]> {
    const votes = await fanOut(this.nodes, (n) => n.renew(holds));
    const reachable = votes.filter((v) => v.ok).length;
    if (reachable < this.#majority) {
      throw new QuorumError(holds[0]?.keys.key ?? "", "renew", outcomes(votes, () => undefined));
    }
    return holds.map((_, i) => {
      const states = votes.flatMap((v) => (v.ok ? [v.value[i] as LeaseState] : []));
      return decide(states, this.#majority);
    });
  }

  createSubscribers(): Promise<RedisSubscriber>[] {
    return this.nodes.map((n) => Promise.resolve(
      new NodeSubscriber(n.name, n.endpoint.timeoutMs, () => n.endpoint.adapter.createSubscriber())));
  }

  async #lease(hold: Hold, operation: string, op: (node: SingleStore) => Promise<LeaseState>): Promise<LeaseState> {
    const held = (s: LeaseState): boolean => s === "held";
    const votes = await this.#ask(op, held);
    if (this.#undecided(votes, held)) throw this.#quorumError(hold, votes, operation, held);
    return decide(votes.flatMap((v) => (v.ok ? [v.value] : [])), this.#majority);
  }

  /**
   * Runs `op` on every node; while the answers cannot decide the question, asks the nodes that
   * did not answer again (QUORUM_RETRIES times at most, after a short random pause).
   */
  async #ask<T>(op: (node: SingleStore) => Promise<T>, agreed: (value: T) => boolean): Promise<Vote<T>[]> {
    let votes = await fanOut(this.nodes, op);
    for (let round = 0; round < QUORUM_RETRIES && this.#undecided(votes, agreed); round++) {
      await sleep(splitPauseMs(0));
      const again = new Map((await fanOut(votes.flatMap((v) => (v.ok ? [] : [v.node])), op)).map((v) => [v.node, v]));
      votes = votes.map((v) => again.get(v.node) ?? v);
    }
    return votes;
  }

  /**
   * Too few answers to tell yes from no: the nodes that did not answer could still make a
   * majority either way. That calls for a QuorumError, not a verdict.
   */
  #undecided<T>(votes: readonly Vote<T>[], agreed: (value: T) => boolean): boolean {
    const answered = votes.filter((v) => v.ok);
    const yes = answered.filter((v) => v.ok && agreed(v.value)).length;
    const missing = votes.length - answered.length;
    return answered.length < this.#majority || (yes < this.#majority && yes + missing >= this.#majority);
  }

  #quorumError<T>(hold: Hold, votes: readonly Vote<T>[], operation: string, agreed: (value: T) => boolean): QuorumError {
    return new QuorumError(hold.keys.key, operation, outcomes(votes, (v) => (agreed(v) ? undefined : `refused (${String(v)})`)));
  }
}

/** A majority of "held" is held; otherwise "taken" only if a majority saw another owner. */
function decide(states: readonly LeaseState[], majority: number): LeaseState {
  if (states.filter((s) => s === "held").length >= majority) return "held";
  return states.filter((s) => s === "taken").length >= majority ? "taken" : "gone";
}

function publishOf(node: SingleStore): string {
  return node.endpoint.adapter.cluster ? "SPUBLISH" : "PUBLISH";
}
