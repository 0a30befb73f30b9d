/**
 * The named-store engine: Surelock's primitives on a store that addresses locks by name and keeps
 * its leases alive itself (PostgreSQL, etcd; see backend.ts). The store waits for the lock (its own
 * wake-ups and bounded poll), renews every hold of the instance (one statement per tick on
 * PostgreSQL, the session's keep-alive on etcd) and aborts a hold's signal the moment it can no
 * longer vouch for it. This engine turns what the store grants into the same Hold and Lease the
 * Redis engine hands out: a Hold per store hold (re-entries share it), whose validity is the
 * store's held-until instant and whose loss is the store's abort; the Lease on top is unchanged.
 */
import type { Clock } from "../clock.js";
import type { Shutdown } from "../deadline.js";
import type { ElectionOps, Engine, LatchOps, LockSpec, Obtain, ObtainResult } from "../engine.js";
import { ClosedError, ConflictError, LockLostError, LockNotHeldError, LockTimeoutError, UnsupportedError, type LockLostReason } from "../errors.js";
import { Ids } from "../ids.js";
import type { KeySpace } from "../keys.js";
import { Hold, type Confirmation } from "../lease/hold.js";
import { Lease, type LeaseRuntime, type LeaseStore, type LeaseWatchdog } from "../lease/lease.js";
import { Sections } from "../lease/sections.js";
import type { HoldRef, KeepaliveResult, ReleaseResult, SharedTarget } from "../store/types.js";
import type { NamedBackend, NamedHeld, NamedMode, NamedReentry } from "./backend.js";

export interface NamedEngineOptions {
  readonly backend: NamedBackend;
  readonly clock: Clock;
  readonly keys: KeySpace;
  /** Put before every lock name (PostgreSQL's names carry the Surelock's prefix; etcd's store root does). */
  readonly namePrefix: string;
  readonly acquireTimeoutMs: number;
  /** The longest a store call can take before it settles by itself, ms. */
  readonly callBoundMs: number;
  /** The longest pause between two looks of a latch's waiter that heard nothing, ms. */
  readonly pollMs: number;
  /** The instance's close, which the Surelock owns. */
  readonly shutdown: Shutdown;
}

/** A hold of the store, as this process's Hold: valid while the store vouches for it. */
class NamedHold extends Hold {
  readonly held: NamedHeld;
  readonly #stop: () => void;

  constructor(held: NamedHeld, init: ConstructorParameters<typeof Hold>[0]) {
    super(init);
    this.held = held;
    this.trustUntil(held.heldUntil());
    const onAbort = (): void => {
      const why = held.signal.reason as unknown;
      const reason: LockLostReason = why instanceof LockLostError ? why.reason : why instanceof ClosedError ? "closed" : "unreachable";
      this.lose(reason, why instanceof Error ? why.message : "the store stopped vouching for it");
    };
    if (held.signal.aborted) onAbort();
    else held.signal.addEventListener("abort", onAbort, { once: true });
    this.#stop = () => held.signal.removeEventListener("abort", onAbort);
  }

  /** The store renews the hold: its held-until instant is the validity, whatever this Hold last heard. */
  override checkValidity(at?: number): void {
    const until = this.held.heldUntil();
    if (until > 0) this.trustUntil(until);
    super.checkValidity(at);
  }

  /** The hold ended here: its store signal no longer concerns it. */
  detach(): void {
    this.#stop();
  }
}

/** The same error, about the user's key rather than the store's name for it. */
function aboutKey(error: unknown, key: string): unknown {
  if (error instanceof LockTimeoutError) return new LockTimeoutError(key, error.waitedMs, error.timeoutMs, "lock", error.cause === undefined ? undefined : { cause: error.cause });
  if (error instanceof LockLostError) return new LockLostError(key, error.reason, error.message, { cause: error });
  if (error instanceof ConflictError) return new ConflictError(key, error.message);
  if (error instanceof LockNotHeldError) return new LockLostError(key, "expired", error.message, { cause: error });
  return error;
}

const NO_WATCHDOG: LeaseWatchdog = { confirmed: () => {}, stopRenewing: () => {}, forget: () => {} };

export class NamedEngine implements Engine, LeaseRuntime {
  readonly kind: "postgres" | "etcd";
  readonly keys: KeySpace;
  readonly clock: Clock;
  readonly ids = new Ids();
  readonly sections = new Sections();
  readonly acquireTimeoutMs: number;
  readonly callBoundMs: number;
  /** The store renews holds itself: a lease's notices to a watchdog have no one to go to. */
  readonly keepalive = NO_WATCHDOG;
  readonly store: LeaseStore;
  readonly #backend: NamedBackend;
  readonly #prefix: string;
  readonly #pollMs: number;
  readonly shutdown: Shutdown;
  /** This process's holds by hold id, so that re-entries share one Hold. */
  readonly #holds = new Map<string, NamedHold>();

  constructor(o: NamedEngineOptions) {
    this.#backend = o.backend;
    this.kind = o.backend.store;
    this.keys = o.keys;
    this.clock = o.clock;
    this.#prefix = o.namePrefix;
    this.#pollMs = o.pollMs;
    this.acquireTimeoutMs = o.acquireTimeoutMs;
    this.callBoundMs = o.callBoundMs;
    this.shutdown = o.shutdown;
    this.store = {
      keepalive: async (items) => Promise.all(items.map(async (item): Promise<KeepaliveResult> => {
        if (item.kind !== "renew") throw new TypeError("a named store keeps no tickets for a lease");
        const hold = this.#holds.get(item.ref.hold);
        if (!hold) return "gone";
        try {
          await this.#backend.extend(hold.held, item.ttlMs);
          return "held";
        } catch (error) {
          if (error instanceof LockLostError) return error.reason === "taken" ? "taken" : "gone";
          if (error instanceof LockNotHeldError) return "gone";
          throw error;
        }
      })),
      check: async (ref) => {
        const hold = this.#holds.get(ref.hold);
        return hold && (await this.#backend.check(hold.held)) ? "held" : "gone";
      },
      release: async (ref, entry): Promise<ReleaseResult> => {
        const hold = this.#holds.get(ref.hold);
        if (!hold) return { status: "gone" };
        const status = await this.#backend.release(hold.held, entry);
        return status === "freed" ? { status, grants: [] } : { status };
      },
    };
  }

  get ticketPrefix(): string {
    return this.ids.instance;
  }

  /** Aborts, with a ClosedError, when close() is called. */
  get closed(): AbortSignal {
    return this.shutdown.signal;
  }

  assertOpen(): void {
    this.shutdown.assertOpen();
  }

  /** The store's names and mode for a primitive's lock: each kind of lock in a name space of its own. */
  #named(spec: LockSpec, permits: number): { names: string[]; mode: NamedMode; election?: boolean } {
    const t = spec.target;
    // An election's candidacy (the only lock that announces a free lock to observers).
    if (t.family === "exclusive" && t.announce) return { names: [`${this.#prefix}el/${t.keys.key}`], mode: { kind: "mutex" }, election: true };
    if (t.family === "exclusive") return { names: [`${this.#prefix}x/${t.keys.key}`], mode: { kind: "mutex" } };
    if (t.family === "multi") return { names: t.keys.each.map((k) => `${this.#prefix}x/${k.key}`), mode: { kind: "mutex" } };
    if (spec.mode === "s") return { names: [`${this.#prefix}sem/${t.keys.key}`], mode: { kind: "semaphore", limit: t.limit, permits } };
    return { names: [`${this.#prefix}rw/${t.keys.key}`], mode: { kind: spec.mode === "r" ? "read" : "write" } };
  }

  async obtain({ spec, wanted: w, section, reentry }: Obtain): Promise<ObtainResult> {
    const { names, mode, election } = this.#named(spec, w.permits);
    const hold = this.ids.id();
    const fresh = reentry.kind === "fresh";
    // A nested read (inside a read or write section of this lock) is one more entry on that
    // section's hold: it already has at least read access, and must not queue behind itself.
    const how: NamedReentry = reentry.kind === "join" ? { kind: "hold", hold: reentry.hold }
      : reentry.kind === "nested" ? { kind: "hold", hold: reentry.via }
        : w.owner !== undefined && spec.sharesByOwner ? { kind: "owner" } : { kind: "fresh" };
    const owner = w.owner ?? (!fresh && section ? section.lease.owner : this.ids.owner());
    const entry = fresh ? hold : this.ids.id();
    const signal = w.signal ? AbortSignal.any([w.signal, this.shutdown.signal]) : this.shutdown.signal;
    const sentAt = this.clock.now();
    let held: NamedHeld;
    try {
      held = await this.#backend.acquire({
        names, mode, hold, entry, owner, reentry: how, ttlMs: spec.ttlMs, leaseTimeMs: w.leaseTimeMs, timeoutMs: w.timeoutMs, signal,
        ...(election ? { election } : {}),
      });
    } catch (error) {
      if (!fresh && error instanceof LockLostError) section?.lease._hold.lose("expired", "found when re-entering");
      throw aboutKey(error, spec.key);
    }
    // The section's hold was lost while this re-entry was on the wire: the entry is given back.
    const lostMeanwhile = fresh ? undefined : section?.lease._hold.lost;
    if (lostMeanwhile) {
      this.#backend.release(held, entry).catch(() => {});
      throw lostMeanwhile;
    }
    let h = this.#holds.get(held.hold);
    // A hold being released here ends with that release: a new entry stands on a new Hold.
    if (h?.phase !== "held") {
      const ttlMs = w.leaseTimeMs ?? spec.ttlMs;
      const ref: HoldRef = { target: spec.target, hold: held.hold, token: held.tokens[0]!, ...(spec.target.family === "multi" ? { tokens: held.tokens } : {}) };
      const confirmed: Confirmation = Hold.first(sentAt, ttlMs);
      h = new NamedHold(held, {
        ref, owner, ttlMs, renewing: w.leaseTimeMs === undefined, permits: w.permits, clock: this.clock, confirmed,
        pttlMs: Math.max(0, held.heldUntil() - sentAt),
      });
      this.#holds.set(held.hold, h);
    }
    return { lease: Lease._create(h, entry, this), entered: held.status === "entered", attempts: 1 };
  }

  /** A countdown latch on the store, named in a space of its own. */
  latch(key: string, count: number, ttlMs: number): LatchOps {
    const name = `${this.#prefix}latch/${key}`;
    const latch = this.#backend.latch;
    const about = (error: unknown): never => {
      throw error instanceof ConflictError ? new ConflictError(key, error.message) : error;
    };
    return {
      clock: this.clock,
      closed: this.shutdown.signal,
      pollMs: this.#pollMs,
      assertOpen: () => this.assertOpen(),
      newId: () => this.ids.id(),
      countDown: (id) => latch.countDown(name, id, count, ttlMs).catch(about),
      read: () => latch.read(name, count).catch(about),
      listen: (poke) => latch.listen(name, count, poke),
    };
  }

  /** An election's store side: the value, the leader, and hearing of changes, by the election's name. */
  election(key: string): ElectionOps {
    const name = `${this.#prefix}el/${key}`;
    const election = this.#backend.election;
    return {
      proclaim: async (lease, value) => {
        const hold = this.#holds.get(lease._hold.ref.hold);
        if (!hold || hold.lost) throw hold?.lost ?? new LockLostError(key, "expired", "found on proclaim");
        // No value: the leadership stands for none, which the store reads until one is proclaimed.
        if (value === null) return;
        try {
          await election.proclaim(hold.held, name, value);
        } catch (error) {
          if (error instanceof LockLostError) throw hold.lose(error.reason, "found on proclaim");
          throw error;
        }
      },
      leader: async () => {
        const l = await election.leader(name);
        return l && { owner: l.owner, value: l.value, fencingToken: l.token, expiresInMs: l.expiresInMs };
      },
      listen: (poke) => election.listen(name, poke),
    };
  }

  setPermits(_target: SharedTarget, _limit: number): Promise<void> {
    return Promise.reject(new UnsupportedError(`setPermits() on ${this.kind === "etcd" ? "etcd" : "PostgreSQL"}: ` +
      "a semaphore's limit is fixed there while it has holders or waiters (create it with the new number once it is idle)"));
  }

  /**
   * etcd: `operations` (the store's own write requests) in one transaction that goes through only
   * while `lease`'s hold stands. A lease known to be lost writes nothing, without a request.
   */
  async fenced(lease: Lease, operations: readonly object[]): Promise<{ readonly written: boolean; readonly responses: readonly object[] }> {
    const hold = lease._hold;
    if (!(hold instanceof NamedHold) || !this.#backend.fenced) {
      throw new UnsupportedError(`a transaction fenced by a lease on ${this.kind === "etcd" ? "etcd" : "PostgreSQL"} from another Surelock`);
    }
    if (!lease.held) return { written: false, responses: [] };
    return this.#backend.fenced(hold.held, operations);
  }

  /** Nobody here is handed grants: the store's own waiters learn of a release from the store. */
  handOver(): void {}

  holdEnded(hold: Hold): void {
    if (this.#holds.get(hold.ref.hold) === hold) {
      this.#holds.delete(hold.ref.hold);
      (hold as NamedHold).detach();
    }
  }

  /**
   * close()'s steps, run once by the Shutdown after its signal ended every wait (ClosedError):
   * gives back every entry held here (signals abort first), lets a release on the wire finish,
   * then stops the store.
   */
  async shutDown(): Promise<void> {
    // A hold being released stays until its release ends (holdEnded takes it off then).
    const holds = [...this.#holds.values()].filter((hold) => hold.phase !== "releasing");
    for (const hold of holds) this.#holds.delete(hold.ref.hold);
    await Promise.all([
      this.shutdown.drained,
      ...holds.flatMap((hold) => {
        const entries = hold.leases.map((lease) => lease._entry);
        hold.lose("closed", "the Surelock instance was closed while it was held");
        hold.detach();
        // Each call is bounded by the store's own request bound; what does not get through expires by itself.
        return entries.map((entry) => this.#backend.release(hold.held, entry).catch(() => {}));
      }),
    ]);
    await this.#backend.close();
  }
}
