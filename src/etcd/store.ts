/**
 * surelock's locks on etcd, built on the `etcd3` client's KV, Txn, Watch and Lease requests (not on
 * its lock or election objects). A hold is one key, `<prefix>L/<name>/<hold>`, created under a
 * lease; its creation revision orders the waiters and is the fencing token. A waiter watches only
 * the key it waits behind, from an explicit revision, and reads the queue again after every wake-up
 * (a wake-up says something changed, never that the lock is ours). A hold lives as long as its
 * lease: the instance's session (renewed by the watchdog, see session.ts) or a lease of its own
 * (`leaseTimeMs`, never renewed).
 */
import type { FilterType, IDuplexStream, IKeyValue, IRangeResponse, IRequestOp, ITxnResponse, IWatchRequest, IWatchResponse } from "etcd3";
import { systemClock, trustedUntil, type Clock } from "../clock.js";
import { Interruption, pause, widelyWatched, within } from "../deadline.js";
import {
  ClosedError, ConflictError, ConnectionError, InvalidArgumentError, LockLostError, LockNotHeldError, LockTimeoutError, UnsupportedError,
} from "../errors.js";
import { checkKey, checkOwner, checkPositiveInt, checkSignal, checkTimeout, checkTtl, MAX_DURATION_MS, MAX_PERMITS } from "../validate.js";
import { bounded, closeStream, isEtcdClient, isLeaseGone, typed, type EtcdClient } from "./calls.js";
import { decodeHolder, encodeHolder, modeLetter, modeOf, prefixOf, rangeEnd, type HolderValue, type Space } from "./layout.js";
import { Session, SessionLost, type Generation } from "./session.js";
import { standing, type Queued, type Standing } from "./standing.js";
import type {
  AcquireRequest, Bounds, Capabilities, Feature, Held, HolderInfo, HoldRef, LatchState, LeaderInfo, LockInfo, LockMode, NamedLockStore, ReleaseResult,
} from "./types.js";

/**
 * etcd's watch filters (etcd3's FilterType values), written here: a value import of `etcd3` would
 * load the optional peer with surelock's entry point, and `new Surelock({ redis })` must run without it.
 */
const NOPUT = 0 as FilterType.Noput;
const NODELETE = 1 as FilterType.Nodelete;

export interface EtcdStoreOptions {
  /** An `etcd3` `Etcd3` client (not a namespace of one). The store never closes it. */
  readonly client: unknown;
  /** Prefix of every key the store writes (default `surelock/`). */
  readonly prefix?: string;
  /** The session lease's TTL in ms (default 10,000); etcd grants whole seconds, at least its minimum. */
  readonly sessionTtlMs?: number;
  /** Bound of each etcd request in ms (default 5,000). */
  readonly requestTimeoutMs?: number;
  /** How often a waiter re-reads its queue without a wake-up, in ms (default 2,000). */
  readonly recheckMs?: number;
  readonly clock?: Clock;
}

interface Tracked {
  ref: HoldRef;
  readonly controller: AbortController;
  /** The value last written, and the key's mod revision after it (for one-request releases). */
  value: HolderValue;
  modRevision: bigint;
  heldUntil: () => number;
  /** The hold's own lease, when it has one (leaseTimeMs). */
  ownLease?: { id: string; timer: unknown };
  released: boolean;
  /** A deleting release is on the wire: its key missing from a check is not a loss. */
  releasing: boolean;
}

type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

const CAPABILITIES: Capabilities = {
  store: "etcd", reentry: ["fresh", "hold", "owner"], fairness: "revision", fencing: "create-revision",
  readWrite: true, semaphore: true, multi: true, election: true, latch: true, setPermits: false, quorum: false, foreignGuard: false,
};

const WHY_NOT: Record<Feature, string> = {
  setPermits: "setPermits: a semaphore's limit on etcd is recorded in each holder's key; drain the semaphore to change it",
  quorum: "quorum mode: etcd is a consensus store already; give one Etcd3 client for the cluster",
  foreignGuard: "a fencing guard on another store: the etcd store fences etcd Txns only (compare the holder key's create revision)",
  nestedRead: "a nested read past waiting writers: an etcd reader always queues in revision order",
};

/** One CAS loop's bound: past it, the key is changing faster than we can write it. */
const CAS_TRIES = 16;

export class EtcdStore implements NamedLockStore {
  readonly capabilities: Capabilities = CAPABILITIES;
  readonly #client: EtcdClient;
  readonly #root: string;
  readonly #clock: Clock;
  readonly #requestMs: number;
  readonly #recheckMs: number;
  readonly #session: Session;
  readonly #holds = new Map<string, Tracked>();
  readonly #closing = widelyWatched();
  #verifying = false;

  constructor(options: EtcdStoreOptions) {
    if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", options, "an object");
    if (!isEtcdClient(options.client)) throw new InvalidArgumentError("options.client", options.client, "an etcd3 Etcd3 client");
    this.#client = options.client;
    this.#root = options.prefix === undefined ? "surelock/" : checkKey("options.prefix", options.prefix);
    const ttl = options.sessionTtlMs === undefined ? 10_000 : checkTtl("options.sessionTtlMs", options.sessionTtlMs);
    this.#requestMs = options.requestTimeoutMs === undefined ? 5_000 : checkPositiveInt("options.requestTimeoutMs", options.requestTimeoutMs, MAX_DURATION_MS);
    this.#recheckMs = options.recheckMs === undefined ? 2_000 : checkPositiveInt("options.recheckMs", options.recheckMs, MAX_DURATION_MS);
    this.#clock = options.clock ?? systemClock;
    this.#session = new Session(this.#client, this.#clock, ttl, this.#requestMs, () => void this.#verify());
  }

  /** Limits as of now (the session's TTL is the one etcd granted once a session exists). */
  bounds(): Bounds {
    return {
      leaseGranularityMs: 1000,
      sessionTtlMs: this.#session.current?.ttlMs ?? Math.ceil(this.#session.ttlMs / 1000) * 1000,
      requestTimeoutMs: this.#requestMs,
      recheckMs: this.#recheckMs,
    };
  }

  /** Throws UnsupportedError naming `feature` and why etcd cannot offer it. */
  require(feature: Feature): never {
    const why = WHY_NOT[feature];
    if (why === undefined) throw new InvalidArgumentError("feature", feature, `one of ${Object.keys(WHY_NOT).join(", ")}`);
    throw new UnsupportedError(`the etcd store does not offer ${why}`);
  }

  /** Changing a semaphore's limit: refused (see `require`, feature setPermits). */
  setPermits(name: string, limit: number): never {
    checkKey("name", name);
    checkPositiveInt("limit", limit, MAX_PERMITS);
    return this.require("setPermits");
  }

  // ---------------------------------------------------------------------------------------------
  // Locks

  /** Acquires (or re-enters) a lock, waiting up to `timeoutMs`. */
  async acquire(req: AcquireRequest): Promise<Held> {
    this.#checkRequest(req);
    return this.#acquireIn("L", req, undefined);
  }

  /**
   * Several locks as one: each name in sorted order (so two callers never wait on each other in a
   * cycle), all with the same hold id; on any failure those taken are given back. One bound covers all.
   */
  async acquireAll(names: readonly string[], req: Omit<AcquireRequest, "name">): Promise<Held[]> {
    if (!Array.isArray(names) || names.length === 0) throw new InvalidArgumentError("names", names, "a non-empty array of names");
    names.forEach((n, i) => checkKey(`names[${i}]`, n));
    if (new Set(names).size !== names.length) throw new InvalidArgumentError("names", names, "distinct names");
    if (req.reentry?.kind !== "fresh") throw new InvalidArgumentError("reentry", req.reentry, "{ kind: \"fresh\" } (a multi-lock is not re-entered)");
    this.#checkRequest({ ...req, name: names[0]! });
    const started = this.#clock.now();
    const taken: Held[] = [];
    try {
      for (const name of [...names].sort()) {
        const left = req.timeoutMs === Infinity ? Infinity : Math.max(0, req.timeoutMs - (this.#clock.now() - started));
        taken.push(await this.#acquireIn("L", { ...req, name, timeoutMs: left }, undefined));
      }
      return taken;
    } catch (error) {
      await Promise.all(taken.map((h) => this.release(h.ref, req.entry).catch(() => undefined)));
      throw error;
    }
  }

  /**
   * Gives `entry` back: `held` when other entries remain, `freed` when the key is deleted, `gone`
   * when it was not there (expired, force-released). One request in the usual case.
   */
  async release(ref: HoldRef, entry: string): Promise<ReleaseResult> {
    this.#checkRef(ref);
    if (typeof entry !== "string" || entry.length === 0) throw new InvalidArgumentError("entry", entry, "a non-empty entry id");
    const tracked = this.#holds.get(ref.key);
    const key = Buffer.from(ref.key);
    let seen: { value: HolderValue; mod: bigint } | undefined =
      tracked && tracked.ref.token === ref.token ? { value: tracked.value, mod: tracked.modRevision } : undefined;
    for (let i = 0; i < CAS_TRIES; i++) {
      if (!seen) {
        const kv = (await this.#range({ key })).kvs[0];
        const value = kv && BigInt(kv.create_revision) === ref.token ? decodeHolder(kv.value) : undefined;
        if (!kv || !value) return this.#untrack(ref, { status: "gone" });
        seen = { value, mod: BigInt(kv.mod_revision) };
      }
      const rest = seen.value.e.filter((e) => e !== entry);
      if (rest.length === seen.value.e.length) {
        // Not among the entries: a replay of a release that took effect.
        return rest.length === 0 ? this.#untrack(ref, { status: "gone" }) : { status: "held" };
      }
      const next: HolderValue = { ...seen.value, e: rest };
      const deleting = rest.length === 0 && tracked !== undefined && tracked.ref.token === ref.token;
      if (deleting) tracked.releasing = true;
      let res: ITxnResponse;
      try {
        res = await this.#release(key, ref, seen.mod, rest.length === 0 ? undefined : next);
      } catch (error) {
        if (rest.length === 0) {
          // Whether the delete ran is unknown, and the session would keep the key alive forever:
          // the hold is over for its caller, and its key is deleted in the background until it is gone.
          if (tracked && tracked.ref.token === ref.token) {
            tracked.released = true;
            this.#forget(tracked);
            this.#abandon(ref.key, { id: ref.lease, signal: tracked.ownLease ? this.#closing.signal : this.#session.current?.signal ?? this.#closing.signal, own: !!tracked.ownLease });
          } else {
            this.#abandon(ref.key, { id: ref.lease, signal: this.#closing.signal, own: false });
          }
        }
        throw error;
      }
      if (res.succeeded) {
        if (rest.length > 0) {
          if (tracked) {
            tracked.value = next;
            tracked.modRevision = BigInt(res.header.revision);
          }
          return { status: "held" };
        }
        return this.#untrack(ref, { status: "freed" });
      }
      if (deleting) this.#releaseFailed(tracked);
      const kv = res.responses[0]?.response_range?.kvs[0];
      const value = kv && BigInt(kv.create_revision) === ref.token ? decodeHolder(kv.value) : undefined;
      if (!kv || !value) return this.#untrack(ref, { status: "gone" });
      seen = { value, mod: BigInt(kv.mod_revision) };
    }
    throw new ConflictError(ref.name, `the holder key changed ${CAS_TRIES} times during a release`);
  }

  /** The release Txn: delete the key (`next` undefined) or write the remaining entries, if unchanged since `mod`. */
  #release(key: Buffer, ref: HoldRef, mod: bigint, next: HolderValue | undefined): Promise<ITxnResponse> {
    return this.#txn(
        [
          { key, target: "Create", result: "Equal", create_revision: ref.token.toString() },
          { key, target: "Mod", result: "Equal", mod_revision: mod.toString() },
        ],
      next === undefined
        ? [{ request_delete_range: { key } }]
        : [{ request_put: { key, value: encodeHolder(next), ignore_lease: true } }],
      [{ request_range: { key } }],
      "a release",
    );
  }

  /** A deleting release found the key changed: the next check tells whether the hold is gone. */
  #releaseFailed(t: Tracked): void {
    t.releasing = false;
  }

  /**
   * After each session keep-alive: one Txn compares every hold's key with its creation revision
   * (64 to a Txn); only when one differs are the keys read, and a hold whose key is gone or is
   * another's is lost (`taken`) then. A hold's key can go while its lease lives only by a
   * force-release; this costs one request a round instead of a watch per hold.
   */
  async #verify(): Promise<void> {
    if (this.#verifying) return;
    this.#verifying = true;
    try {
      const list = [...this.#holds.values()].filter((t) => !t.released && !t.releasing);
      for (let i = 0; i < list.length; i += 64) {
        const chunk = list.slice(i, i + 64);
        const res = await this.#txn(
          chunk.map((t) => ({ key: Buffer.from(t.ref.key), target: "Create" as const, result: "Equal" as const, create_revision: t.ref.token.toString() })),
          [],
          chunk.map((t) => ({ request_range: { key: Buffer.from(t.ref.key) } })),
          "a check of the holds",
        );
        if (res.succeeded) continue;
        chunk.forEach((t, j) => {
          const kv = res.responses[j]?.response_range?.kvs[0];
          if ((kv && BigInt(kv.create_revision) === t.ref.token) || t.released || t.releasing) return;
          t.controller.abort(new LockLostError(t.ref.name, "taken", "its key was deleted (force-released)"));
          this.#forget(t);
        });
      }
    } catch {
      // The next round checks again; the session's own expiry bounds how long a hold is trusted.
    } finally {
      this.#verifying = false;
    }
  }

  /**
   * Renews a hold: on the session, a keep-alive now (every session hold is renewed with it); on a
   * lease of its own, a new lease of `ttlMs` (whole seconds, rounded up) the key moves to. Returns
   * the new held-until instant; LockLostError when the hold is gone.
   */
  async extend(ref: HoldRef, ttlMs: number): Promise<number> {
    this.#checkRef(ref);
    checkTtl("ttlMs", ttlMs);
    const tracked = this.#holds.get(ref.key);
    if (!tracked || tracked.controller.signal.aborted || tracked.ref.token !== ref.token) {
      throw new LockNotHeldError(ref.name, "this store does not hold it (released, lost or never taken here)");
    }
    if (!tracked.ownLease) {
      const g = this.#session.current;
      if (!g || g.id !== ref.lease) throw new LockLostError(ref.name, "expired", "its session lease ended");
      const [, there] = await Promise.all([this.#session.keepalive(g), this.check(ref)]);
      if (!there) {
        const lost = new LockLostError(ref.name, "taken", "the holder key is gone or is another hold's");
        tracked.controller.abort(lost);
        this.#forget(tracked);
        throw lost;
      }
      if (!g.alive) throw this.#lost(ref.name, g.signal.reason);
      return g.heldUntil();
    }
    const key = Buffer.from(ref.key);
    const sentAt = this.#clock.now();
    const lease = await this.#grant(ttlMs);
    const res = await this.#txn(
      [{ key, target: "Create", result: "Equal", create_revision: ref.token.toString() }],
      [{ request_put: { key, ignore_value: true, lease: lease.id } }],
      [],
      "an extend",
    );
    if (!res.succeeded) {
      void this.#revoke(lease.id);
      const lost = new LockLostError(ref.name, "taken", "the holder key is gone or is another hold's");
      tracked.controller.abort(lost);
      throw lost;
    }
    const old = tracked.ownLease.id;
    this.#clock.clearTimeout(tracked.ownLease.timer);
    const until = trustedUntil(sentAt, ttlMs);
    tracked.ownLease = { id: lease.id, timer: this.#expireAt(tracked, until) };
    tracked.heldUntil = () => until;
    tracked.ref = { ...tracked.ref, lease: lease.id };
    tracked.modRevision = BigInt(res.header.revision);
    void this.#revoke(old);
    return until;
  }

  /** Whether the hold's key is still there with its creation revision (a request). */
  async check(ref: HoldRef): Promise<boolean> {
    this.#checkRef(ref);
    const kv = (await this.#range({ key: Buffer.from(ref.key) })).kvs[0];
    return !!kv && BigInt(kv.create_revision) === ref.token;
  }

  /**
   * The fencing guard: runs `ops` in one Txn that succeeds only while the holder key (each one, for
   * the keys of a multi-lock) exists with its hold's creation revision. `false` (and nothing
   * written) once a hold is gone.
   */
  async fenced(ref: HoldRef | readonly HoldRef[], ops: readonly IRequestOp[]): Promise<{ readonly ok: boolean; readonly response: ITxnResponse }> {
    const refs: readonly HoldRef[] = Array.isArray(ref) ? (ref as readonly HoldRef[]) : [ref as HoldRef];
    if (refs.length === 0) throw new InvalidArgumentError("ref", ref, "a HoldRef, or a non-empty array of them");
    refs.forEach((r) => this.#checkRef(r));
    if (!Array.isArray(ops) || ops.length === 0) throw new InvalidArgumentError("ops", ops, "a non-empty array of etcd request ops");
    const compare = refs.map((r) => ({ key: Buffer.from(r.key), target: "Create" as const, result: "Equal" as const, create_revision: r.token.toString() }));
    const response = await this.#txn(compare, [...ops], [], "a fenced write");
    return { ok: response.succeeded, response };
  }

  // ---------------------------------------------------------------------------------------------
  // Election: a candidate is a mutex hold under E/; the leader is the first by creation revision.

  /** Waits to lead `name` with `value` proclaimed; the leadership's token is its creation revision. */
  async campaign(req: Omit<AcquireRequest, "mode" | "reentry"> & { readonly value: string }): Promise<Held> {
    if (typeof req.value !== "string") throw new InvalidArgumentError("value", req.value, "a string");
    const full: AcquireRequest = { ...req, mode: { kind: "mutex" }, reentry: { kind: "fresh" } };
    this.#checkRequest(full);
    return this.#acquireIn("E", full, req.value);
  }

  /** Changes the leader's value; LockLostError when `ref` no longer leads. */
  async proclaim(ref: HoldRef, value: string): Promise<void> {
    this.#checkRef(ref);
    if (typeof value !== "string") throw new InvalidArgumentError("value", value, "a string");
    const tracked = this.#holds.get(ref.key);
    if (!tracked) throw new LockNotHeldError(ref.name, "this store does not lead it");
    const key = Buffer.from(ref.key);
    const next: HolderValue = { ...tracked.value, v: value };
    const res = await this.#txn(
      [{ key, target: "Create", result: "Equal", create_revision: ref.token.toString() }],
      [{ request_put: { key, value: encodeHolder(next), ignore_lease: true } }],
      [],
      "a proclaim",
    );
    if (!res.succeeded) {
      const lost = new LockLostError(ref.name, "taken", "the leadership key is gone");
      tracked.controller.abort(lost);
      throw lost;
    }
    tracked.value = next;
    tracked.modRevision = BigInt(res.header.revision);
  }

  /** The leader of `name` now, or undefined when there is none. */
  async readLeader(name: string): Promise<LeaderInfo | undefined> {
    checkKey("name", name);
    const prefix = prefixOf(this.#root, "E", name);
    const res = await this.#range({ key: Buffer.from(prefix), range_end: rangeEnd(prefix), sort_target: "Create", sort_order: "Ascend", limit: 1 });
    const kv = res.kvs[0];
    if (!kv) return undefined;
    const v = decodeHolder(kv.value);
    return { hold: kv.key.toString().slice(prefix.length), owner: v?.o ?? "", value: v?.v ?? "", token: BigInt(kv.create_revision) };
  }

  /** Steps down (or leaves the line of candidates): the candidate's key goes, whatever its entries. */
  async resign(ref: HoldRef): Promise<ReleaseResult> {
    this.#checkRef(ref);
    const key = Buffer.from(ref.key);
    const t = this.#holds.get(ref.key);
    const mine = t !== undefined && t.ref.token === ref.token;
    if (mine) t.releasing = true;
    let res: ITxnResponse;
    try {
      res = await this.#txn([{ key, target: "Create", result: "Equal", create_revision: ref.token.toString() }], [{ request_delete_range: { key } }], [], "a resign");
    } catch (error) {
      if (mine) this.#releaseFailed(t);
      throw error;
    }
    return this.#untrack(ref, { status: res.succeeded ? "freed" : "gone" });
  }

  // ---------------------------------------------------------------------------------------------
  // Latch: counting down adds an id to a set (a replay of one id counts once); open at `count` ids.

  /** Counts `id` down on latch `name`; the key lives `ttlMs`. `false` when `id` was counted already. */
  async countDown(name: string, id: string, ttlMs: number): Promise<boolean> {
    checkKey("name", name);
    checkKey("id", id);
    checkTtl("ttlMs", ttlMs);
    this.#open();
    const key = Buffer.from(prefixOf(this.#root, "C", name) + id);
    const lease = await this.#grant(ttlMs);
    const res = await this.#txn(
      [{ key, target: "Create", result: "Equal", create_revision: "0" }],
      [{ request_put: { key, value: Buffer.from(id), lease: lease.id } }],
      [],
      "a count-down",
    );
    if (!res.succeeded) void this.#revoke(lease.id);
    return res.succeeded;
  }

  async readLatch(name: string, count: number): Promise<LatchState> {
    checkKey("name", name);
    checkPositiveInt("count", count, MAX_PERMITS);
    const prefix = prefixOf(this.#root, "C", name);
    const res = await this.#range({ key: Buffer.from(prefix), range_end: rangeEnd(prefix), count_only: true });
    const counted = Number(res.count);
    return { counted, remaining: Math.max(0, count - counted), revision: BigInt(res.header.revision) };
  }

  /** Waits until `count` ids were counted down; LockTimeoutError after `timeoutMs`. */
  async awaitLatch(name: string, count: number, timeoutMs: number, signal?: AbortSignal): Promise<LatchState> {
    checkKey("name", name);
    checkPositiveInt("count", count, MAX_PERMITS);
    checkTimeout("timeoutMs", timeoutMs);
    if (signal !== undefined) checkSignal("signal", signal);
    this.#open();
    const started = this.#clock.now();
    const prefix = prefixOf(this.#root, "C", name);
    const stop = new Interruption({
      clock: this.#clock,
      deadlineAt: timeoutMs === Infinity || timeoutMs === 0 ? Infinity : started + timeoutMs,
      timeout: () => new LockTimeoutError(name, this.#clock.now() - started, timeoutMs, "latch"),
      signals: [signal, this.#closing.signal],
    });
    try {
      for (;;) {
        const state = await stop.race(this.readLatch(name, count));
        if (state.remaining === 0) return state;
        if (timeoutMs === 0) throw new LockTimeoutError(name, this.#clock.now() - started, 0, "latch");
        stop.throwIfInterrupted();
        await this.#wake(stop, { prefix, from: state.revision + 1n, only: "put" });
      }
    } finally {
      stop.dispose();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // For a command line: read and clear a lock.

  async inspect(name: string): Promise<LockInfo> {
    checkKey("name", name);
    const prefix = prefixOf(this.#root, "L", name);
    const { queue, revision } = await this.#list(prefix);
    const holders: HolderInfo[] = [];
    const waiters: HolderInfo[] = [];
    for (const q of queue) {
      const holding = standing(queue, q.token).kind === "holding";
      const v = q.value;
      const info: HolderInfo = {
        hold: q.hold, owner: v?.o ?? "", mode: v ? modeOf(v).kind : "mutex", permits: v?.p ?? 1,
        token: q.token, entries: v?.e.length ?? 0, lease: q.lease, holding,
      };
      (holding ? holders : waiters).push(info);
    }
    return { name, holders, waiters, revision };
  }

  /** Deletes every holder and waiter key of `name`; how many there were. Their holders see "taken". */
  async forceRelease(name: string): Promise<number> {
    checkKey("name", name);
    const prefix = prefixOf(this.#root, "L", name);
    try {
      const res = await this.#client.kv.deleteRange({ key: Buffer.from(prefix), range_end: rangeEnd(prefix) }, bounded(this.#requestMs));
      return Number(res.deleted);
    } catch (error) {
      throw typed(error, "a force-release");
    }
  }

  /** Ends the session (its keys go with its lease) and every hold's signal; the client stays open. */
  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort(new ClosedError("this etcd store"));
    for (const t of [...this.#holds.values()]) {
      t.controller.abort(new ClosedError("this etcd store"));
      this.#forget(t);
      if (t.ownLease) void this.#revoke(t.ownLease.id);
    }
    await this.#session.close();
  }

  // ---------------------------------------------------------------------------------------------
  // The acquisition

  async #acquireIn(space: Space, req: AcquireRequest, proclaimed: string | undefined): Promise<Held> {
    this.#open();
    const prefix = prefixOf(this.#root, space, req.name);
    if (req.reentry.kind === "hold") return this.#enter(prefix + req.reentry.hold, req);
    if (req.reentry.kind === "owner") {
      const mine = [...this.#holds.values()].find(
        (t) => t.ref.key.startsWith(prefix) && t.ref.key.length > prefix.length && !t.ref.key.slice(prefix.length).includes("/") &&
          t.value.o === req.owner && t.value.m === modeLetter(req.mode) && !t.controller.signal.aborted,
      );
      if (mine) return this.#enter(mine.ref.key, req);
      const { queue } = await this.#list(prefix);
      const foreign = queue.find((q) => q.value?.o === req.owner && standing(queue, q.token).kind === "holding");
      if (foreign) {
        throw new UnsupportedError(`re-entry by owner of a hold another process founded ("${req.name}"): the etcd store joins holds of its own instance only`);
      }
    }
    const started = this.#clock.now();
    const stop = new Interruption({
      clock: this.#clock,
      // 0 is one attempt: bounded by its requests, not by a deadline that has passed already.
      deadlineAt: req.timeoutMs === Infinity || req.timeoutMs === 0 ? Infinity : started + req.timeoutMs,
      timeout: () => new LockTimeoutError(req.name, this.#clock.now() - started, req.timeoutMs),
      signals: [req.signal, this.#closing.signal],
    });
    try {
      return await this.#fresh(prefix, req, proclaimed, stop, started);
    } finally {
      stop.dispose();
    }
  }

  async #fresh(prefix: string, req: AcquireRequest, proclaimed: string | undefined, stop: Interruption, started: number): Promise<Held> {
    const key = prefix + req.hold;
    const keyBuf = Buffer.from(key);
    const value: HolderValue = {
      o: req.owner, m: modeLetter(req.mode), p: req.mode.kind === "semaphore" ? req.mode.permits : 1,
      n: req.mode.kind === "semaphore" ? req.mode.limit : 0, e: [req.entry], ...(proclaimed === undefined ? {} : { v: proclaimed }),
    };
    // The lease the key lives under, and how long it is trusted.
    let lease: { id: string; signal: AbortSignal; heldUntil: () => number; own: boolean; gen?: Generation };
    let created: { res: ITxnResponse; sentAt: number } | undefined;
    for (let attempt = 0; ; attempt++) {
      const sentAt = this.#clock.now();
      if (req.leaseTimeMs !== undefined) {
        const own = await stop.race(this.#grant(req.leaseTimeMs), (l) => void this.#revoke(l.id));
        const until = trustedUntil(sentAt, req.leaseTimeMs);
        lease = { id: own.id, signal: this.#closing.signal, heldUntil: () => until, own: true };
      } else {
        const g: Generation = await stop.race(this.#session.lease());
        lease = { id: g.id, signal: g.signal, heldUntil: () => g.heldUntil(), own: false, gen: g };
      }
      const list: IRequestOp = { request_range: { key: Buffer.from(prefix), range_end: rangeEnd(prefix), sort_target: "Create", sort_order: "Ascend" } };
      const putting = this.#txn(
        [{ key: keyBuf, target: "Create", result: "Equal", create_revision: "0" }],
        [{ request_put: { key: keyBuf, value: encodeHolder(value), lease: lease.id } }, list],
        [list],
        "an acquire",
      );
      try {
        created = { res: await stop.race(putting, () => this.#abandon(key, lease)), sentAt };
        break;
      } catch (error) {
        if (isLeaseGone(error) && !lease.own && attempt === 0) {
          // The session ended between its last keep-alive and this request: a new one, once.
          this.#session.current?.end(new SessionLost("expired", `etcd lease ${lease.id} is gone`, { cause: error }));
          continue;
        }
        // Whether the key was created is unknown: take it back, in the background, until it is gone.
        this.#abandon(key, lease);
        throw this.#lost(req.name, error);
      }
    }
    const token = BigInt(created.res.header.revision);
    let view = parseQueue(prefix, created.res.responses[created.res.succeeded ? 1 : 0]?.response_range, BigInt(created.res.header.revision));
    const mine = view.queue.find((q) => q.key === key);
    if (!mine) throw new LockLostError(req.name, "expired", "its key vanished as it was written (its lease ended)");
    const myToken = created.res.succeeded ? token : mine.token;
    let modRevision = mine.modRevision;
    try {
      for (;;) {
        const st: Standing = standing(view.queue, myToken);
        if (st.kind === "holding") {
          // First in line, but the lease ran out on this side while it waited: never handed out as held.
          if (this.#clock.now() >= lease.heldUntil()) {
            throw this.#lost(req.name, lease.signal.aborted ? lease.signal.reason : new SessionLost("expired", "its lease ran out before the lock came to it"));
          }
          const held = this.#track(req.name, key, myToken, req.mode, value, modRevision, lease, created.sentAt, req.leaseTimeMs);
          return held;
        }
        if (st.kind === "absent") {
          // Its own key is gone: never a holder. Whether its lease ended or someone deleted the key,
          // a keep-alive tells (etcd answers TTL 0 for a lease that is gone).
          if (lease.gen && !lease.signal.aborted) await this.#session.keepalive(lease.gen).catch(() => undefined);
          const ended = lease.signal.aborted || (lease.own && this.#clock.now() >= lease.heldUntil());
          throw ended
            ? this.#lost(req.name, lease.signal.aborted ? lease.signal.reason : new SessionLost("expired", "its leaseTime ran out while it waited"))
            : new LockLostError(req.name, "taken", "its waiting key was deleted (force-released) while it waited");
        }
        if (st.kind === "conflict") {
          throw new ConflictError(req.name, `the semaphore's holders use a limit of ${st.limit}, not ${value.n}`);
        }
        if (req.timeoutMs === 0) throw new LockTimeoutError(req.name, this.#clock.now() - started, 0);
        stop.throwIfInterrupted();
        if (lease.signal.aborted) throw this.#lost(req.name, lease.signal.reason);
        // A lease of its own is nobody's watchdog's: its end is a deadline of the wait. Without it, a
        // waiter with no timeout on a cluster it cannot reach would re-read in vain forever.
        const ownRanOut = (): SessionLost => new SessionLost("expired", "its leaseTime ran out while it waited");
        if (lease.own && this.#clock.now() >= lease.heldUntil()) throw ownRanOut();
        const waiting = new Interruption({
          clock: this.#clock,
          signals: [stop.signal, lease.signal],
          ...(lease.own ? { deadlineAt: lease.heldUntil(), timeout: ownRanOut } : {}),
        });
        try {
          await this.#wake(waiting, st.kind === "behind"
            ? { key: st.key, from: view.revision + 1n, only: "delete" }
            : { prefix, from: view.revision + 1n, only: "delete" });
          // A wake-up says only that something changed: who holds is read again, every time.
          try {
            view = await waiting.race(this.#list(prefix));
          } catch (error) {
            // A failed read (a leader election, a member down) is tried again after the next wake-up;
            // the deadline and the session's life bound how long.
            if (!(error instanceof ConnectionError) || waiting.signal.aborted) throw error;
            // A pause on a timer before the next try: a read refused at once (a client's open
            // circuit breaker) must not turn this loop into one that never yields to timers.
            await this.#pause(waiting, Math.min(this.#recheckMs, 200));
          }
        } finally {
          waiting.dispose();
        }
        modRevision = view.queue.find((q) => q.key === key)?.modRevision ?? modRevision;
      }
    } catch (error) {
      // A try (or a wait) that gave up takes its key out of the line before it answers, so that the
      // caller's next try does not find its own stale place ahead of it; if that fails, in the background.
      if (!(await this.#deleteNow(key, lease))) this.#abandon(key, lease);
      if (error instanceof SessionLost) throw this.#lost(req.name, error);
      throw error;
    }
  }

  /** Deletes a waiter's key now (one bounded request); false when that could not be confirmed. */
  async #deleteNow(key: string, lease: { own: boolean; signal: AbortSignal }): Promise<boolean> {
    if (lease.own || lease.signal.aborted) return false;
    try {
      await this.#client.kv.deleteRange({ key: Buffer.from(key) }, bounded(this.#requestMs));
      return true;
    } catch {
      return false;
    }
  }

  /** One more entry on a hold this store tracks: a CAS on its value, no waiting. */
  async #enter(key: string, req: AcquireRequest): Promise<Held> {
    const t = this.#holds.get(key);
    if (!t || t.controller.signal.aborted) throw new LockNotHeldError(req.name, "the hold to re-enter is not held by this store");
    const keyBuf = Buffer.from(key);
    for (let i = 0; i < CAS_TRIES; i++) {
      const next: HolderValue = { ...t.value, e: [...t.value.e.filter((e) => e !== req.entry), req.entry] };
      const res = await this.#txn(
        [
          { key: keyBuf, target: "Create", result: "Equal", create_revision: t.ref.token.toString() },
          { key: keyBuf, target: "Mod", result: "Equal", mod_revision: t.modRevision.toString() },
        ],
        [{ request_put: { key: keyBuf, value: encodeHolder(next), ignore_lease: true } }],
        [{ request_range: { key: keyBuf } }],
        "a re-entry",
      );
      if (res.succeeded) {
        t.value = next;
        t.modRevision = BigInt(res.header.revision);
        return { status: "entered", ref: t.ref, signal: t.controller.signal, heldUntil: () => t.heldUntil() };
      }
      const kv = res.responses[0]?.response_range?.kvs[0];
      const v = kv && BigInt(kv.create_revision) === t.ref.token ? decodeHolder(kv.value) : undefined;
      if (!kv || !v) {
        const lost = new LockLostError(req.name, "taken", "the holder key is gone");
        t.controller.abort(lost);
        throw lost;
      }
      t.value = v;
      t.modRevision = BigInt(kv.mod_revision);
    }
    throw new ConflictError(req.name, `the holder key changed ${CAS_TRIES} times during a re-entry`);
  }

  #track(
    name: string, key: string, token: bigint, mode: LockMode, value: HolderValue, modRevision: bigint,
    lease: { id: string; signal: AbortSignal; heldUntil: () => number; own: boolean }, sentAt: number, leaseTimeMs: number | undefined,
  ): Held {
    const controller = widelyWatched();
    const ref: HoldRef = { name, hold: key.slice(key.lastIndexOf("/") + 1), key, token, mode, lease: lease.id, leaseKind: lease.own ? "own" : "session" };
    const t: Tracked = { ref, controller, value, modRevision, heldUntil: lease.heldUntil, released: false, releasing: false };
    if (lease.own) {
      const until = trustedUntil(sentAt, leaseTimeMs!);
      t.ownLease = { id: lease.id, timer: this.#expireAt(t, until) };
    } else {
      const onLoss = (): void => {
        if (!t.released) controller.abort(this.#lost(name, lease.signal.reason));
        this.#forget(t);
      };
      if (lease.signal.aborted) onLoss();
      else lease.signal.addEventListener("abort", onLoss, { once: true });
      controller.signal.addEventListener("abort", () => lease.signal.removeEventListener("abort", onLoss), { once: true });
    }
    this.#holds.set(key, t);
    return { status: "founded", ref, signal: controller.signal, heldUntil: () => t.heldUntil() };
  }

  #expireAt(t: Tracked, until: number): unknown {
    const fire = (): unknown => {
      const left = until - this.#clock.now();
      if (left > 0) return (t.ownLease!.timer = this.#clock.setTimeout(fire, Math.ceil(left)));
      if (!t.released) t.controller.abort(new LockLostError(t.ref.name, "expired", "its leaseTime ran out"));
      this.#forget(t);
      return undefined;
    };
    return this.#clock.setTimeout(fire, Math.max(0, Math.ceil(until - this.#clock.now())));
  }

  #untrack(ref: HoldRef, result: ReleaseResult): ReleaseResult {
    const t = this.#holds.get(ref.key);
    if (t && t.ref.token === ref.token) {
      t.released = true;
      this.#forget(t);
      if (t.ownLease) void this.#revoke(t.ownLease.id);
    }
    return result;
  }

  #forget(t: Tracked): void {
    if (this.#holds.get(t.ref.key) === t) this.#holds.delete(t.ref.key);
    if (t.ownLease) this.#clock.clearTimeout(t.ownLease.timer);
  }

  /**
   * Waits for a change: the deletion (or, for a latch, creation) of `key` or of any key under
   * `prefix`, from revision `from` on. Settles early (to re-read) when the watch fails or ends, when
   * its revision was compacted, or after `recheckMs` (a member cut off from the leader can keep a
   * watch silent); rejects when `stop` aborts.
   *
   * Each wait is a watch stream of its own (the client's raw Watch RPC), closed when the wait ends.
   * Not the client's shared watch manager: after a reconnect (a leader change, a member down) it
   * can receive a response for a watcher it already dropped and throws "Failed to find watcher
   * for IWatchResponse" from its stream handler, which nobody can catch and which ends the process;
   * and a wait that ends while its watcher is being re-attached leaves that cancel pending. A stream
   * per wait costs an HTTP/2 stream on a connection the client has open anyway, and its deadline
   * frees the server's side even if the cancel is lost.
   */
  async #wake(stop: Interruption, on: { key?: string; prefix?: string; from: bigint; only: "put" | "delete" }): Promise<void> {
    const key = Buffer.from(on.key ?? on.prefix!);
    const request: IWatchRequest = {
      create_request: {
        key,
        ...(on.prefix === undefined ? {} : { range_end: rangeEnd(on.prefix) }),
        start_revision: on.from.toString(),
        // What is filtered out: a lock waits for deletes, a latch for puts.
        filters: [on.only === "delete" ? NOPUT : NODELETE],
      },
    };
    let stream: WatchStream | undefined;
    let timer: unknown;
    try {
      // Opening is local (no round trip): bounded anyway, and a stream opened too late is closed.
      let gaveUp = false;
      const opened = this.#client.watchClient.watch(bounded(this.#recheckMs + this.#requestMs)).then((st) => {
        if (gaveUp) closeStream(st);
        return st;
      });
      const opening = within(opened, this.#requestMs, () => new Error("watch stream not opened in time"));
      try {
        stream = await stop.race(opening, closeStream);
      } catch (error) {
        gaveUp = true;
        if (stop.signal.aborted) throw error;
        // No stream: re-read after a pause rather than at once (an open circuit refuses at once).
        await this.#pause(stop, Math.min(this.#recheckMs, 200));
        return;
      }
      const s = stream;
      const woken = new Promise<void>((resolve) => {
        // Events, a cancel (a compacted revision: the caller re-lists), an error or the end: each
        // is a reason to read the queue again.
        s.on("data", (res) => {
          if (res.canceled || res.events.length > 0 || res.compact_revision !== "0") resolve();
        });
        s.on("error", () => resolve());
        s.on("end", () => resolve());
        timer = this.#clock.setTimeout(resolve, this.#recheckMs);
      });
      s.write(request);
      await stop.race(woken);
    } finally {
      this.#clock.clearTimeout(timer);
      if (stream) closeStream(stream);
    }
  }

  /** Resolves after `ms` on the store's clock; rejects when `stop` aborts first. */
  async #pause(stop: Interruption, ms: number): Promise<void> {
    await pause(this.#clock, ms, stop.signal);
    stop.throwIfInterrupted();
  }

  /** Takes back a key whose acquisition failed or was given up, in the background until it is gone. */
  #abandon(key: string, lease: { id: string; signal: AbortSignal; own: boolean }): void {
    if (lease.own) {
      void this.#revoke(lease.id);
      return;
    }
    let delayMs = 50;
    const attempt = async (): Promise<void> => {
      // Once the session is gone, so is the key.
      if (lease.signal.aborted) return;
      try {
        await this.#client.kv.deleteRange({ key: Buffer.from(key) }, bounded(this.#requestMs));
      } catch {
        delayMs = Math.min(delayMs * 2, 2_000);
        this.#clock.setTimeout(() => void attempt(), delayMs);
      }
    };
    void attempt();
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  async #list(prefix: string): Promise<{ queue: Queued[]; revision: bigint }> {
    const res = await this.#range({ key: Buffer.from(prefix), range_end: rangeEnd(prefix), sort_target: "Create", sort_order: "Ascend" });
    return parseQueue(prefix, res);
  }

  async #range(req: Parameters<EtcdClient["kv"]["range"]>[0]): Promise<IRangeResponse> {
    try {
      return await this.#client.kv.range(req, bounded(this.#requestMs));
    } catch (error) {
      throw typed(error, "a read");
    }
  }

  async #txn(compare: NonNullable<Parameters<EtcdClient["kv"]["txn"]>[0]["compare"]>, success: IRequestOp[], failure: IRequestOp[], what: string): Promise<ITxnResponse> {
    try {
      return await this.#client.kv.txn({ compare, success, failure }, bounded(this.#requestMs));
    } catch (error) {
      if (isLeaseGone(error)) throw error;
      throw typed(error, what);
    }
  }

  async #grant(ttlMs: number): Promise<{ id: string }> {
    try {
      const res = await this.#client.leaseClient.leaseGrant({ TTL: Math.ceil(ttlMs / 1000) }, bounded(this.#requestMs));
      return { id: res.ID };
    } catch (error) {
      throw typed(error, "a lease grant");
    }
  }

  async #revoke(id: string): Promise<void> {
    try {
      await this.#client.leaseClient.leaseRevoke({ ID: id }, bounded(this.#requestMs));
    } catch {
      // It ends at its TTL anyway.
    }
  }

  /** A session's end, or a request's failure, as the caller's typed error. */
  #lost(name: string, reason: unknown): Error {
    if (reason instanceof SessionLost) return new LockLostError(name, reason.reason, reason.message, { cause: reason.cause ?? reason });
    if (isLeaseGone(reason)) return new LockLostError(name, "expired", "its etcd lease is gone", { cause: reason });
    return reason instanceof Error ? reason : typed(reason, "a request");
  }

  #open(): void {
    if (this.#closing.signal.aborted) throw new ClosedError("this etcd store");
  }

  #checkRequest(req: AcquireRequest): void {
    if (typeof req !== "object" || req === null) throw new InvalidArgumentError("request", req, "an object");
    checkKey("name", req.name);
    checkKey("hold", req.hold);
    if (req.hold.includes("/")) throw new InvalidArgumentError("hold", req.hold, "an id without /");
    checkKey("entry", req.entry);
    checkOwner("owner", req.owner);
    checkTimeout("timeoutMs", req.timeoutMs);
    if (req.leaseTimeMs !== undefined) checkTtl("leaseTimeMs", req.leaseTimeMs);
    if (req.signal !== undefined) checkSignal("signal", req.signal);
    const m = req.mode as LockMode | undefined;
    if (!m || !["mutex", "read", "write", "semaphore"].includes(m.kind)) {
      throw new InvalidArgumentError("mode", m, "{ kind: \"mutex\" | \"read\" | \"write\" } or { kind: \"semaphore\", limit, permits }");
    }
    if (m.kind === "semaphore") {
      checkPositiveInt("mode.limit", m.limit, MAX_PERMITS);
      checkPositiveInt("mode.permits", m.permits, m.limit);
    }
    const r = req.reentry as AcquireRequest["reentry"] | undefined;
    if (!r || !["fresh", "hold", "owner"].includes(r.kind)) throw new InvalidArgumentError("reentry", r, "{ kind: \"fresh\" | \"owner\" } or { kind: \"hold\", hold }");
    if (r.kind === "hold") checkKey("reentry.hold", r.hold);
  }

  #checkRef(ref: HoldRef): void {
    if (typeof ref !== "object" || ref === null || typeof ref.key !== "string" || typeof ref.token !== "bigint") {
      throw new InvalidArgumentError("ref", ref, "a HoldRef this store returned");
    }
  }
}

/** The queue in a range answer; `revision`: the answer's revision when the range ran inside a Txn. */
function parseQueue(prefix: string, res: IRangeResponse | undefined, revision?: bigint): { queue: Queued[]; revision: bigint } {
  const kvs: IKeyValue[] = res?.kvs ?? [];
  const queue = kvs.map((kv) => {
    const key = kv.key.toString();
    return {
      key, hold: key.slice(prefix.length), token: BigInt(kv.create_revision), lease: kv.lease,
      value: decodeHolder(kv.value), modRevision: BigInt(kv.mod_revision),
    };
  });
  return { queue, revision: revision ?? BigInt(res?.header?.revision ?? 0) };
}
