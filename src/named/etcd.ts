/**
 * The etcd store behind the named-store engine. etcd takes a multi-lock one name at a time (in
 * sorted order, one key and one token per name): this adapter makes the keys one hold, with the
 * tokens in the user's order, one signal and the shortest validity of them.
 */
import type { IRequestOp } from "etcd3";
import type { EtcdStore } from "../etcd/store.js";
import type { Held, HoldRef } from "../etcd/types.js";
import type { Clock } from "../clock.js";
import type { NamedAcquire, NamedBackend, NamedElection, NamedHeld, NamedLatch } from "./backend.js";

interface EtcdNamedHeld extends NamedHeld {
  /** One ref per name, in the user's order. */
  readonly refs: readonly HoldRef[];
}

export class EtcdBackend implements NamedBackend {
  readonly store = "etcd" as const;
  readonly #store: EtcdStore;

  /** etcd keeps no count with a latch: every caller brings its own, and the latch is open at that many ids. */
  readonly latch: NamedLatch;

  /**
   * A candidacy is a key under the election's prefix (etcd's own election layout); the first by
   * creation revision leads. The value is written into its key ("" reads as none).
   */
  readonly election: NamedElection;

  constructor(store: EtcdStore, clock: Clock, pollMs: number) {
    this.#store = store;
    this.election = {
      async proclaim(held, _name, value) {
        await store.proclaim((held as EtcdNamedHeld).refs[0]!, value);
      },
      async leader(name) {
        const l = await store.readLeader(name);
        // etcd reads no lease TTL with the key: the session's TTL bounds how long the leader can last unrenewed.
        return l ? { owner: l.owner, value: l.value === "" ? null : l.value, token: l.token, expiresInMs: store.bounds().sessionTtlMs } : null;
      },
      listen(_name, poke) {
        // No channel: a bounded poll tells an observer of a change within pollInterval.
        let timer: unknown;
        const tick = (): void => {
          poke();
          timer = clock.setTimeout(tick, pollMs);
        };
        timer = clock.setTimeout(tick, pollMs);
        return { ready: Promise.resolve(), release: () => clock.clearTimeout(timer) };
      },
    };
    this.latch = {
      async countDown(name, id, count, ttl) {
        const counted = await store.countDown(name, id, ttl);
        return { left: (await store.readLatch(name, count)).remaining, counted };
      },
      async read(name, count) {
        return (await store.readLatch(name, count)).remaining;
      },
      listen(name, count, poke) {
        // The store's own wait watches the latch's keys from a revision on; its end is the poke.
        const controller = new AbortController();
        store.awaitLatch(name, count, Infinity, controller.signal).then(poke, () => {});
        return { ready: Promise.resolve(), release: () => controller.abort() };
      },
    };
  }

  async acquire(r: NamedAcquire): Promise<NamedHeld> {
    const base = {
      mode: r.mode, hold: r.hold, entry: r.entry, owner: r.owner, reentry: r.reentry, timeoutMs: r.timeoutMs, signal: r.signal,
      ...(r.leaseTimeMs === undefined ? {} : { leaseTimeMs: r.leaseTimeMs }),
    };
    let helds: Held[];
    if (r.election) {
      helds = [await this.#store.campaign({
        name: r.names[0]!, hold: r.hold, entry: r.entry, owner: r.owner, timeoutMs: r.timeoutMs, signal: r.signal, value: "",
        ...(r.leaseTimeMs === undefined ? {} : { leaseTimeMs: r.leaseTimeMs }),
      })];
    } else if (r.names.length === 1) {
      helds = [await this.#store.acquire({ ...base, name: r.names[0]! })];
    } else if (r.reentry.kind === "fresh") {
      helds = await this.#store.acquireAll(r.names, base);
    } else {
      // A re-entry of a multi-lock: one more entry on each name's key, in sorted order, all or none.
      helds = [];
      try {
        for (const name of [...r.names].sort()) helds.push(await this.#store.acquire({ ...base, name }));
      } catch (error) {
        await Promise.all(helds.map((h) => this.#store.release(h.ref, r.entry).catch(() => undefined)));
        throw error;
      }
    }
    const byName = new Map(helds.map((h) => [h.ref.name, h]));
    const ordered = r.names.map((n) => byName.get(n)!);
    const first = ordered[0]!;
    const held: EtcdNamedHeld = {
      status: ordered.every((h) => h.status === "entered") ? "entered" : first.status,
      hold: first.ref.hold,
      tokens: ordered.map((h) => h.ref.token),
      refs: ordered.map((h) => h.ref),
      signal: ordered.length === 1 ? first.signal : AbortSignal.any(ordered.map((h) => h.signal)),
      heldUntil: () => Math.min(...ordered.map((h) => h.heldUntil())),
    };
    return held;
  }

  async release(held: NamedHeld, entry: string): Promise<"held" | "freed" | "gone"> {
    const results = await Promise.all((held as EtcdNamedHeld).refs.map((ref) => this.#store.release(ref, entry)));
    if (results.some((r) => r.status === "gone")) return "gone";
    return results.every((r) => r.status === "freed") ? "freed" : "held";
  }

  async extend(held: NamedHeld, ttlMs: number): Promise<number> {
    const untils = await Promise.all((held as EtcdNamedHeld).refs.map((ref) => this.#store.extend(ref, ttlMs)));
    return Math.min(...untils);
  }

  async check(held: NamedHeld): Promise<boolean> {
    const answers = await Promise.all((held as EtcdNamedHeld).refs.map((ref) => this.#store.check(ref)));
    return answers.every(Boolean);
  }

  async fenced(held: NamedHeld, operations: readonly object[]): Promise<{ readonly written: boolean; readonly responses: readonly object[] }> {
    const { ok, response } = await this.#store.fenced((held as EtcdNamedHeld).refs, operations as readonly IRequestOp[]);
    return { written: ok, responses: ok ? response.responses : [] };
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
