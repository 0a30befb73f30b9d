/**
 * Quorum (Redlock) mode: the store's operations over N independent primaries, composed only
 * through their `Store` interface. An acquisition counts with a majority of nodes holding one hold
 * (docs/quorum.md); the layers above check its validity, counted from the moment it was sent.
 *
 * Fencing tokens form a quorum register: each node's counter issues a token with the acquire, the
 * lease takes the largest among the majority, and the nodes of the majority that issued a smaller
 * one have their counters raised to it before the lease is handed out. A hold's own token on a
 * node is never rewritten: release, renewal and check go by hold id.
 */
import type { RedisSubscriber } from "../adapters/types.js";
import type { Clock } from "../clock.js";
import { pause } from "../deadline.js";
import { QuorumError, UnsupportedError } from "../errors.js";
import type {
  AcquireCall, AcquireResult, CountDownRequest, Grant, HoldRef, HoldState, KeepaliveItem, KeepaliveResult, LatchReply, LatchRequest,
  LeaderReply, LockTarget, ProclaimRequest, ReleaseResult, SharedTarget, SingleTarget, Store, TicketState,
} from "../store/types.js";
import { answered, decideLatch, decideLeader } from "./coordination.js";
import { chosenTokens, raisesFor, withinTokens } from "./multi-tokens.js";
import { NodeSubscriber } from "./node-subscriber.js";
import { askNodes, RETRIES, splitPauseMs } from "./rounds.js";
import { decideAcquire, decideHold, decideRelease, fanOut, majorityOf, outcomes, quorumOf, type AcquireDecision, type Vote } from "./votes.js";

export interface QuorumNode {
  readonly store: Store;
  /** The node's command timeout: a subscription call never waits longer. */
  readonly timeoutMs: number;
}

export class QuorumStore implements Store {
  /** Node calls of release and check still running after their answers were decided. */
  readonly #running = new Set<Promise<unknown>>();
  readonly grants = false;
  readonly #nodes: readonly QuorumNode[];
  readonly #clock: Clock;
  readonly #names: readonly string[];
  /** The longest command timeout of the nodes, ms. */
  readonly #nodeTimeoutMs: number;

  constructor(nodes: readonly QuorumNode[], clock: Clock) {
    this.#nodes = nodes;
    this.#clock = clock;
    this.#names = nodes.map((n) => n.store.name);
    this.#nodeTimeoutMs = Math.max(...nodes.map((n) => n.timeoutMs));
  }

  get name(): string {
    return this.#names.join(",");
  }

  async acquire(call: AcquireCall, stop?: AbortSignal): Promise<AcquireResult> {
    const need = this.#need(call.target);
    // A mutex's waiter keeps its place in every node's ordered line (docs/protocol.md, "Quorum
    // mode's waiting line"): a lost vote keeps its ticket, a lone hold is given back but the ticket
    // stays, and a winner's ticket leaves every line. Other attempts give back all a lost vote took.
    // A join by owner waits in line too when its owner holds nothing yet.
    const queued = (call.reentry.kind === "fresh" || call.reentry.kind === "owner") && call.ask.ticketLeaseMs > 0 && call.target.family === "exclusive" &&
      call.ask.order !== undefined;
    for (let round = 0; ; round++) {
      const startedAt = this.#clock.now();
      const nodeTokens = this.#nodes.map(() => 0n);
      /** The lease token each node of the hold reports (its recorded one, else its own); per key for a multi-key hold. */
      const reported = this.#nodes.map(() => 0n);
      const reportedTokens: (readonly bigint[] | undefined)[] = this.#nodes.map(() => undefined);
      let won: { hold: string; token: bigint; tokens: bigint[] | undefined } | undefined;
      let outcome: AcquireDecision["outcome"] | undefined;
      const { decision, votes, rest } = await fanOut(
        this.#nodes.length,
        (i) => this.#store(i).acquire(call),
        (sofar, all) => {
          const d = decideAcquire(sofar, this.#nodes.length, all, need);
          if (d?.outcome === "won") won = { hold: d.hold, token: d.token, tokens: d.tokens ? [...d.tokens] : chosenTokens(sofar, d.hold) };
          outcome = d?.outcome;
          return d;
        },
        // A vote after the decision: keep it if it is for the winning hold with no larger a token
        // than the lease's (a process joining the hold would read that one); a waiter that lost
        // keeps its ticket; else give it back.
        (vote) => {
          if (vote.ok && (vote.value.status === "founded" || vote.value.status === "entered") && vote.value.ref.hold === won?.hold &&
            vote.value.leaseToken <= won.token && withinTokens(vote.value.leaseTokens, won.tokens)) {
            nodeTokens[vote.node] = vote.value.ref.token;
            reported[vote.node] = vote.value.leaseToken;
            reportedTokens[vote.node] = vote.value.leaseTokens;
            return undefined;
          }
          if (queued && (outcome === "busy" || outcome === "split")) return this.#keepPlace(vote, call);
          return this.#store(vote.node).abandon(call).catch(() => {});
        },
      );
      for (const v of votes) {
        if (v.ok && (v.value.status === "founded" || v.value.status === "entered") && v.value.ref.hold === won?.hold) {
          nodeTokens[v.node] = v.value.ref.token;
          reported[v.node] = v.value.leaseToken;
          reportedTokens[v.node] = v.value.leaseTokens;
        }
      }
      if (decision.outcome === "won") {
        const ref: HoldRef = { target: call.target, hold: decision.hold, token: decision.token, nodeTokens, tokens: won?.tokens };
        // The winner's ticket leaves the lines of the nodes that voted "busy" before the decision
        // (late ones leave as they come): no ghost ticket stands at its early place there.
        const leave = queued
          ? Promise.all(votes.filter((v) => !v.ok || v.value.status === "busy").map((v) => this.#store(v.node).abandon(call).catch(() => {})))
          : undefined;
        // A vote that failed before the decision may still have taken its node's part (its reply
        // was lost): given back, as a late one is. Kept, it would be a copy of the hold under that
        // node's own token, which the watchdog renews and a joiner by owner hears.
        if (!queued) for (const v of votes) if (!v.ok) this.#abandonOn(v.node, call);
        const raised = await this.#raise(call, ref, reported, reportedTokens, need);
        await leave;
        if (raised) {
          // The hold lives while `need` of its nodes do: until the need-th latest expiry.
          const pttls = votes.flatMap((v) => (v.ok && "ref" in v.value && v.value.ref.hold === won?.hold ? [v.value.pttlMs] : []))
            .sort((a, b) => b - a);
          return {
            status: decision.entered ? "entered" : "founded", ref, pttlMs: pttls[need - 1] ?? 0, leaseToken: decision.token,
            leaseTokens: won?.tokens,
          };
        }
        // Too few counters could be raised to the chosen token: as a split vote, undo and retry.
      }
      if (queued && (decision.outcome === "busy" || decision.outcome === "split")) {
        // Lost, with a place in line: lone holds go back, tickets stay. Waits for the late votes'
        // give-backs too: one landing after the next attempt would give back what that one counts.
        await Promise.all([...votes.map((v) => this.#keepPlace(v, call)), rest]);
        const waitMs = decision.outcome === "busy" ? decision.waitMs : splitPauseMs(this.#clock.now() - startedAt);
        return { status: "busy", waitMs, position: -1, counter: 0n };
      }
      // Every vote of a round that did not win is given back, the late ones too, before the caller
      // sends this hold id again: a give-back that landed after the next round's acquire on its
      // node would delete the hold that round counts there.
      await Promise.all([this.#undo(votes, call), rest]);
      if (decision.outcome === "busy") return { status: "busy", waitMs: decision.waitMs, position: -1, counter: 0n };
      if (decision.outcome === "gone") return { status: "gone" };
      if (decision.outcome === "conflict") return { status: "conflict", limit: decision.limit };
      const pauseMs = splitPauseMs(this.#clock.now() - startedAt);
      // A split vote: every contender undid its part; try again after a random pause (the caller
      // attempts again after `waitMs`), so that they do not collide again.
      if ((decision.outcome === "split" || decision.outcome === "won") && call.reentry.kind === "fresh") return { status: "busy", waitMs: pauseMs, position: -1, counter: 0n };
      if (round >= RETRIES || stop?.aborted) {
        throw new QuorumError(call.target.keys.key, call.reentry.kind === "fresh" ? "acquire" : "re-enter", outcomes(votes, this.#names,
          (r) => (r.status === "busy" ? "held by another owner" : r.status === "founded" || r.status === "entered" ? undefined : r.status)),
        undefined, need);
      }
      // Too few answers (a blip: a timeout, a reconnect): ask again, unless the caller gave up. The
      // pause stays under one node timeout, so that the call keeps within the bound the runtime
      // counts for it (QUORUM_ROUNDS rounds of four node timeouts each).
      await pause(this.#clock, Math.min(pauseMs, this.#nodeTimeoutMs), stop);
    }
  }

  /**
   * A lost vote of a waiter with a place in line: a "busy" keeps its ticket there; a lone hold is
   * given back with the ticket kept in its place; an unknown outcome (no answer) is given back whole.
   */
  #keepPlace(vote: Vote<AcquireResult>, call: AcquireCall): Promise<void> | undefined {
    if (vote.ok && vote.value.status === "busy") return undefined;
    const store = this.#store(vote.node);
    // A lone founding steps aside; a lone entry into its owner's hold there (a join by owner) and an
    // unknown outcome are given back whole.
    return (vote.ok && vote.value.status === "founded" ? store.stepAside(call) : store.abandon(call)).catch(() => {});
  }

  async stepAside(call: AcquireCall): Promise<void> {
    await Promise.all(this.#nodes.map((_, i) => this.#store(i).stepAside(call).catch(() => {})));
  }

  async abandon(call: AcquireCall): Promise<void> {
    await Promise.all(this.#nodes.map((_, i) => this.#store(i).abandon(call).catch(() => {})));
  }

  async release(ref: HoldRef, entry: string): Promise<ReleaseResult> {
    const votes = await this.#ask((i) => this.#store(i).release(this.#on(i, ref), entry), (v) => decideRelease(v, this.#nodes.length));
    const decided = decideRelease(votes, this.#nodes.length);
    if (decided) return decided;
    throw new QuorumError(ref.target.keys.key, "release", outcomes(votes, this.#names,
      (r) => (r.status === "gone" || r.status === "taken" ? `refused (${r.status})` : undefined)));
  }

  /**
   * Refused: how many nodes a permit needs depends on the limit (votes.ts, quorumOf), and nodes
   * that missed a change would count permits under another limit than the holders' quorum assumed.
   */
  async setPermits(target: SharedTarget): Promise<readonly Grant[]> {
    throw new UnsupportedError(`semaphore "${target.keys.key}": in quorum mode a semaphore's limit is fixed (the number of ` +
      "nodes a permit needs depends on it); drain it and use another key to change it");
  }

  async keepalive(items: readonly KeepaliveItem[]): Promise<KeepaliveResult[]> {
    const { votes } = await fanOut(this.#nodes.length, (i) => this.#store(i).keepalive(items.map((item) =>
      item.kind === "renew" ? { ...item, ref: this.#on(i, item.ref) } : item)), () => undefined);
    const reachable = votes.filter((v) => v.ok).length;
    if (reachable < majorityOf(this.#nodes.length)) {
      throw new QuorumError(firstKey(items), "renew", outcomes(votes, this.#names, () => undefined));
    }
    return items.map((item, index) => {
      if (item.kind === "renew") {
        const states = votes.map((v): Vote<HoldState> => (v.ok ? { node: v.node, ok: true, value: v.value[index] as HoldState } : v));
        return decideHold(states, this.#nodes.length, this.#need(item.ref.target)) ?? "gone";
      }
      // No node grants in quorum mode: the waiter is told when it may attempt. It may too when its
      // ticket stands in line on no majority: an ordered line's refresh never puts a lapsed ticket
      // back (only an attempt places it, at its order), and no release tells a waiter out of line,
      // so a waiter paused past its ticket lease would otherwise wait until its timeout.
      const states = votes.flatMap((v) => (v.ok ? [v.value[index] as TicketState] : []));
      const turn = states.some((s) => s.status === "turn");
      const outOfLine = states.filter((s) => s.status === "queued" && s.position < 0).length >= majorityOf(this.#nodes.length);
      return turn || outOfLine ? { status: "turn" } : { status: "queued", position: -1, counter: 0n };
    });
  }

  async check(ref: HoldRef): Promise<HoldState> {
    const need = this.#need(ref.target);
    const votes = await this.#ask((i) => this.#store(i).check(this.#on(i, ref)), (v) => decideHold(v, this.#nodes.length, need));
    const decided = decideHold(votes, this.#nodes.length, need);
    if (decided) return decided;
    throw new QuorumError(ref.target.keys.key, "isHeld", outcomes(votes, this.#names, (s) => (s === "held" ? undefined : s)), undefined, need);
  }

  async raise(target: SingleTarget, chosen: bigint, hold: string): Promise<void> {
    await Promise.all(this.#nodes.map((_, i) => this.#store(i).raise(target, chosen, hold)));
  }

  /**
   * Two rounds: the value is stored, then, once a majority stored it, marked kept, which is what a
   * read names (docs/quorum.md, "Elections"). A proclaim that reached fewer than a majority is never
   * named; one that resolved is kept on a majority, which every majority read shares a node with.
   */
  async proclaim(req: ProclaimRequest): Promise<HoldState> {
    const stored = await this.#proclaimRound({ ...req, kept: false });
    return stored === "held" ? this.#proclaimRound({ ...req, kept: true }) : stored;
  }

  async #proclaimRound(req: ProclaimRequest): Promise<HoldState> {
    // Each round resolves at the first majority that decides (the others' calls still run: on one
    // connection a node's first round is ahead of its second, and either order leaves it kept).
    const votes = await this.#ask((i) => this.#store(i).proclaim(req), (v) => decideHold(v, this.#nodes.length));
    const state = decideHold(votes, this.#nodes.length);
    if (state) return state;
    throw new QuorumError(req.name, "proclaim", outcomes(votes, this.#names, (s) => (s === "held" ? undefined : s)));
  }

  async readLeader(name: string, lock: string): Promise<LeaderReply | null> {
    const votes = await this.#everyNode((store) => store.readLeader(name, lock));
    return decideLeader(answered(name, "leader", votes, this.#names), this.#nodes.length);
  }

  async countDown(req: CountDownRequest): Promise<LatchReply> {
    const votes = await this.#everyNode((store) => store.countDown(req));
    return decideLatch(req.count, answered(req.name, "countDown", votes, this.#names));
  }

  async readLatch(req: LatchRequest): Promise<LatchReply> {
    const votes = await this.#everyNode((store) => store.readLatch(req));
    return decideLatch(req.count, answered(req.name, "count", votes, this.#names));
  }

  /** Every node's answer (each call bounded by its node's command timeout), as votes in node order. */
  #everyNode<T>(op: (store: Store) => Promise<T>): Promise<Vote<T>[]> {
    return Promise.all(this.#nodes.map(async (node, i): Promise<Vote<T>> => {
      try {
        return { node: i, ok: true, value: await op(node.store) };
      } catch (error) {
        return { node: i, ok: false, error: error instanceof Error ? error : new Error(String(error)) };
      }
    }));
  }

  subscribers(): Promise<RedisSubscriber>[] {
    return this.#nodes.map((node) => Promise.resolve(
      new NodeSubscriber(node.store.name, node.timeoutMs, () => node.store.subscribers()[0] as Promise<RedisSubscriber>)));
  }

  #store(i: number): Store {
    return (this.#nodes[i] as QuorumNode).store;
  }

  /** The hold as node `i` knows it: its own token there. */
  #on(i: number, ref: HoldRef): HoldRef {
    return { target: ref.target, hold: ref.hold, token: ref.nodeTokens?.[i] ?? 0n };
  }

  /**
   * Raises the counters of the nodes that issued a smaller token than the chosen one, and records
   * the chosen one on every node of the hold that reports another (a copy under a larger token of
   * its own, entered by this join). A node that cannot be raised does not count; returns whether
   * `need` nodes still hold the hold.
   */
  async #raise(call: AcquireCall, ref: HoldRef, reported: readonly bigint[], reportedTokens: readonly (readonly bigint[] | undefined)[],
    need: number): Promise<boolean> {
    const tokens = ref.nodeTokens ?? [];
    const needs = tokens.map((t, i) => (t > 0n ? raisesFor(call.target, ref, reported[i] ?? 0n, reportedTokens[i]) : []));
    const behind = needs.flatMap((n, i) => (n.length > 0 ? [i] : []));
    if (behind.length === 0) return true;
    const raised = await Promise.all(behind.map((i) => Promise.all((needs[i] ?? []).map((r) => this.#store(i).raise(r.target, r.chosen, ref.hold)))
      .then(() => true, () => false)));
    behind.forEach((i, j) => {
      if (raised[j]) return;
      tokens[i] = 0n;
      this.#abandonOn(i, call);
    });
    return tokens.filter((t) => t > 0n).length >= need;
  }

  /** How many nodes must hold a hold of `target`: a majority, more for a semaphore (votes.ts). */
  #need(target: LockTarget): number {
    const n = this.#nodes.length;
    return target.family === "shared" && target.limit > 0 ? quorumOf(n, target.limit) : majorityOf(n);
  }

  /** Gives back every yes vote of a failed attempt, and waits for it (each bounded by its node's timeout). */
  async #undo(votes: readonly Vote<AcquireResult>[], call: AcquireCall): Promise<void> {
    await Promise.all(votes.filter((v) => !v.ok || v.value.status !== "busy").map((v) => this.#store(v.node).abandon(call).catch(() => {})));
  }

  #abandonOn(node: number, call: AcquireCall): void {
    this.#store(node).abandon(call).catch(() => {});
  }

  /** Runs `op` on every node, asking again while the answers cannot decide (rounds.ts). */
  #ask<T, D>(op: (node: number) => Promise<T>, decide: (votes: readonly Vote<T>[]) => D | undefined): Promise<Vote<T>[]> {
    return askNodes(this.#nodes.length, this.#clock, (node) => this.#track(op(node)), decide);
  }

  /** Keeps `call` until it settles: askNodes answers at the first deciding majority, and drain() waits for the rest. */
  #track<T>(call: Promise<T>): Promise<T> {
    this.#running.add(call);
    const done = (): void => void this.#running.delete(call);
    call.then(done, done);
    return call;
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }
}

function firstKey(items: readonly KeepaliveItem[]): string {
  const item = items[0];
  if (!item) return "";
  return (item.kind === "renew" ? item.ref.target : item.target).keys.key;
}
