/**
 * Leader election, modelled on etcd's (client/v3/concurrency, election.go): candidates campaign for
 * a mutex of the election's own key space (`<prefix>:election:{name}`), the one that holds it
 * leads, and the value it stands for is stored with its hold. The leadership is a Lease: renewed
 * by the watchdog, fenced by its token, and its signal aborts the moment it can no longer be
 * trusted — so there is one leader at a time under the mutex's assumptions.
 */
import { Interruption, race } from "../deadline.js";
import { publish } from "../diagnostics.js";
import { InvalidArgumentError, LockLostError, LockNotHeldError } from "../errors.js";
import type { ExclusiveKeys } from "../keys.js";
import type { Lease } from "../lease/lease.js";
import { isWatchNews } from "../protocol/channel.js";
import type { Engine, ElectionOps } from "../engine.js";
import type { Runtime } from "../runtime.js";
import { checkOptions, checkSignal, checkTimeout } from "../validate.js";
import { leaderOf, observeLeader, type Leader } from "./leader.js";
import { Lock } from "./lock.js";

/** Options of `Surelock.election()`. */
export interface ElectionOptions {
  /** The leader's lease length in ms (default: the Surelock's `ttl`). The watchdog renews at ttl/3. */
  readonly ttl?: number;
}

/** Options of `Election.campaign()`. */
export interface CampaignOptions {
  /** What the leader stands for (an address, a shard): `leader()` and `observe()` show it. At most 64 KiB. */
  readonly value?: string;
  /** Gives up the campaign; it rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Longest wait in ms; 0 means one attempt. Default: campaign until elected, resigned or aborted. */
  readonly timeout?: number;
}

/** Options of `Election.observe()`. */
export interface ObserveOptions {
  /** Ends the observation (the iterator returns). */
  readonly signal?: AbortSignal;
}

/** Largest value a leader may proclaim, in bytes of UTF-8. */
export const MAX_VALUE_BYTES = 65_536;

const INTERNAL = Symbol("surelock.election");

/** The election's mutex: a fresh hold per campaign, never shared by owner, never re-entered. */
class Candidacy extends Lock {
  constructor(rt: Engine, keys: ExclusiveKeys, ttlMs: number) {
    super(rt, {
      key: keys.key,
      target: { family: "exclusive", keys, announce: true },
      lockId: keys.lock,
      channel: keys.channel,
      mode: "x",
      ttlMs,
      sharesByOwner: false,
      reentry: () => ({ kind: "fresh" }),
    });
  }
}

/**
 * One election. Each `campaign()` is a candidate of its own (its owner is unique); `resign()`
 * gives up every campaign and leadership of this object; `proclaim()` changes the value of the
 * leadership this object holds.
 */
export class Election {
  /** The election's name. */
  readonly name: string;
  readonly #rt: Engine;
  readonly #ops: ElectionOps;
  readonly #candidacy: Candidacy;
  /** Campaigns still waiting: resign() interrupts them. */
  readonly #campaigns = new Set<AbortController>();
  /** Leaderships won through this object and not given up through it. */
  readonly #leading = new Set<Lease>();

  private constructor(token: typeof INTERNAL, rt: Engine, name: string, ttlMs: number, ops: (keys: ExclusiveKeys) => ElectionOps) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.election()");
    this.name = name;
    this.#rt = rt;
    const keys = rt.keys.exclusive(name, "election");
    this.#ops = ops(keys);
    this.#candidacy = new Candidacy(rt, keys, ttlMs);
  }

  /** @internal Use `Surelock.election()`. */
  static _create(rt: Runtime, name: string, ttlMs: number): Election {
    return new Election(INTERNAL, rt, name, ttlMs, (keys) => redisElection(rt, name, keys));
  }

  /** @internal An election on another store than Redis. Use `Surelock.election()`. */
  static _createOn(engine: Engine, ops: ElectionOps, name: string, ttlMs: number): Election {
    return new Election(INTERNAL, engine, name, ttlMs, () => ops);
  }

  /**
   * Waits until this candidate leads, stores its value, announces it to observers, and resolves
   * with the leadership's lease (release it, or call resign(), to step down; its signal aborts if
   * the leadership is lost). Rejects with LockTimeoutError after `timeout`, with the signal's
   * reason when it aborts, with an AbortError (DOMException) when resign() is called first.
   */
  async campaign(options?: CampaignOptions): Promise<Lease> {
    const o = checkOptions<CampaignOptions>("options", options, ["value", "signal", "timeout"]);
    const value = o.value === undefined ? null : checkValue("options.value", o.value);
    const signal = o.signal === undefined ? undefined : checkSignal("options.signal", o.signal);
    const timeout = o.timeout === undefined ? undefined : checkTimeout("options.timeout", o.timeout);
    const rt = this.#rt;
    rt.assertOpen();
    const resigned = new AbortController();
    this.#campaigns.add(resigned);
    const stop = new Interruption({ clock: rt.clock, signals: [signal, resigned.signal] });
    try {
      // A fresh owner per campaign: the candidacy never joins a hold by owner.
      // A candidate stands by until it leads: the instance's acquireTimeout is for locks, not campaigns.
      const lease = await this.#candidacy.acquire({ signal: stop.signal, timeout: timeout ?? Infinity });
      try {
        // Aborted or resigned while the lock was being granted: step down rather than lead.
        stop.throwIfInterrupted();
        await this.#ops.proclaim(lease, value);
        stop.throwIfInterrupted();
      } catch (error) {
        await lease.release().catch(() => {});
        throw error;
      }
      this.#prune();
      this.#leading.add(lease);
      publish("leader", () => ({ name: this.name, event: "elected", owner: lease.owner, fencingToken: lease.fencingToken }));
      lease.signal.addEventListener("abort", () => {
        // close() steps the leader down on purpose: that is a resignation, not a lost leadership.
        const closed = lease.signal.reason instanceof LockLostError && lease.signal.reason.reason === "closed";
        publish("leader", () => ({ name: this.name, event: closed ? "resigned" : "lost", owner: lease.owner, fencingToken: lease.fencingToken }));
      }, { once: true });
      return lease;
    } finally {
      stop.dispose();
      this.#campaigns.delete(resigned);
    }
  }

  /**
   * Changes the value of the leadership this object holds (etcd's Proclaim), and announces it.
   * Rejects with LockNotHeldError if this object does not lead, LockLostError if its leadership
   * turns out to be lost.
   */
  async proclaim(value: string): Promise<void> {
    const checked = checkValue("value", value);
    this.#rt.assertOpen();
    this.#prune();
    const lease = [...this.#leading].find((l) => l.held);
    if (!lease) throw new LockNotHeldError(this.name, "this Election object does not lead (campaign() first)");
    await this.#ops.proclaim(lease, checked);
    publish("leader", () => ({ name: this.name, event: "proclaimed", owner: lease.owner, fencingToken: lease.fencingToken }));
  }

  /**
   * Gives up: pending campaigns of this object reject (AbortError), and the leadership it holds is
   * released (observers are told at once). Rejects with LockLostError if that leadership had been
   * lost, as `lease.release()` does. Does nothing if this object neither leads nor campaigns.
   */
  async resign(): Promise<void> {
    for (const campaign of this.#campaigns) campaign.abort(new DOMException("the campaign was given up by resign()", "AbortError"));
    const leases = [...this.#leading];
    this.#leading.clear();
    const results = await Promise.allSettled(leases.map(async (lease) => {
      const leading = lease.held;
      await lease.release();
      if (!leading) return;
      publish("leader", () => ({ name: this.name, event: "resigned", owner: lease.owner, fencingToken: lease.fencingToken }));
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** The current leader, read from the store (Redis: a majority of the nodes in quorum mode), or null if there is none. */
  async leader(): Promise<Leader | null> {
    this.#rt.assertOpen();
    return this.#ops.leader();
  }

  /**
   * Who leads, now and each time it changes (another leader, another value, or none: null), by
   * announcements on the election's channel — no polling. Ends when `signal` aborts or the
   * Surelock is closed. See docs/api.md for when a change is seen.
   */
  observe(options?: ObserveOptions): AsyncIterableIterator<Leader | null> {
    const o = checkOptions<ObserveOptions>("options", options, ["signal"]);
    const signal = o.signal === undefined ? undefined : checkSignal("options.signal", o.signal);
    this.#rt.assertOpen();
    return observeLeader({ rt: this.#rt, listen: (poke) => this.#ops.listen(poke), read: () => this.leader(), signal });
  }

  /** Forgets leaderships that ended without resign() (released directly, or lost). */
  #prune(): void {
    for (const lease of this.#leading) if (!lease.held) this.#leading.delete(lease);
  }
}

function checkValue(name: string, value: unknown): string {
  if (typeof value !== "string" || !value.isWellFormed() || Buffer.byteLength(value) > MAX_VALUE_BYTES) {
    throw new InvalidArgumentError(name, value, `a well-formed Unicode string of at most ${MAX_VALUE_BYTES} bytes in UTF-8`);
  }
  return value;
}


/** An election on Redis: the value in the candidacy's lock hash, read by script, announced on its channel. */
function redisElection(rt: Runtime, name: string, keys: ExclusiveKeys): ElectionOps {
  /** How many proclaims each leadership has sent: the next one's number is one more. */
  const proclaims = new WeakMap<Lease, number>();
  return {
    /**
     * Stores the value of `lease`'s hold on a majority of nodes and announces it; a hold found gone
     * is lost. Each proclaim of a leadership is numbered, so that a node keeps the newest it was sent
     * and a read in quorum mode takes the newest a majority shows (docs/quorum.md, "Elections").
     */
    async proclaim(lease, value) {
      const hold = lease._hold;
      const seq = (proclaims.get(lease) ?? 0) + 1;
      proclaims.set(lease, seq);
      const state = await race(rt.store.proclaim({ name, keys, hold: hold.ref.hold, token: lease.fencingToken, value, seq }), hold.lostSignal);
      if (state === "held") return;
      throw hold.lose(state === "taken" ? "taken" : "expired", "found on proclaim");
    },
    async leader() {
      return leaderOf(await rt.store.readLeader(name, keys.lock));
    },
    listen: (poke) => rt.listen(keys.channel, { message: (m) => { if (isWatchNews(m)) poke(); }, missed: poke }),
  };
}
