/** The PostgreSQL store behind the named-store engine: PostgresLocks waits and renews, PostgresStore answers. */
import { PostgresLocks, type PgHeld } from "../postgres/locks.js";
import type { PostgresStore } from "../postgres/store.js";
import type { PgMode } from "../postgres/types.js";
import { ConflictError, LockLostError } from "../errors.js";
import type { NamedAcquire, NamedBackend, NamedElection, NamedHeld, NamedLatch, NamedMode } from "./backend.js";

const LETTER: Record<NamedMode["kind"], PgMode> = { mutex: "x", read: "r", write: "w", semaphore: "s" };

interface PgNamedHeld extends NamedHeld {
  readonly pg: PgHeld;
}

export class PostgresBackend implements NamedBackend {
  readonly store = "postgres" as const;
  readonly #store: PostgresStore;
  readonly #locks: PostgresLocks;

  readonly latch: NamedLatch;
  /** A candidacy is a mutex hold on the election's name; its row carries the proclaimed value. */
  readonly election: NamedElection;

  constructor(store: PostgresStore, ttlMs: number) {
    this.#store = store;
    this.#locks = new PostgresLocks(store, { ttlMs });
    const conflict = (name: string, stored: number, count: number): ConflictError =>
      new ConflictError(name, `a latch of count ${stored} is stored under this name, and this caller asked for ${count}: every caller of one latch must agree`);
    this.latch = {
      async countDown(name, id, count, ttl) {
        const r = await store.countDown(name, id, count, ttl);
        if (r.status === "conflict") throw conflict(name, r.remaining, count);
        return { left: r.remaining, counted: r.status === "counted" };
      },
      async read(name, count) {
        const state = await store.readLatch(name);
        if (!state) return count;
        if (state.count !== count) throw conflict(name, state.count, count);
        return state.remaining;
      },
      listen(name, _count, poke) {
        const stop = store.listen(name, (w) => {
          if (w.kind === "latch" || w.kind === "resync") poke();
        });
        return { ready: store.listening(), release: stop };
      },
    };
    this.election = {
      async proclaim(held, name, value) {
        if (!(await store.proclaim(name, held.hold, value))) throw new LockLostError(name, "expired", "found on proclaim");
      },
      async leader(name) {
        const l = await store.readLeader(name);
        return l && { owner: l.owner, value: l.value, token: l.token, expiresInMs: Math.max(0, l.pttlMs) };
      },
      listen(name, poke) {
        // A release, a proclaim, or notifications that may have been lost: read again.
        const stop = store.listen(name, () => poke());
        return { ready: store.listening(), release: stop };
      },
    };
  }

  async acquire(r: NamedAcquire): Promise<NamedHeld> {
    const pg = await this.#locks.acquire({
      names: r.names, hold: r.hold, owner: r.owner, mode: LETTER[r.mode.kind], reentry: r.reentry, entry: r.entry,
      ...(r.mode.kind === "semaphore" ? { permits: r.mode.permits, limit: r.mode.limit } : {}),
      ttlMs: r.ttlMs, ...(r.leaseTimeMs === undefined ? {} : { leaseTimeMs: r.leaseTimeMs }),
      timeoutMs: r.timeoutMs, signal: r.signal,
    });
    const held: PgNamedHeld = { status: pg.status, hold: pg.ref.hold, tokens: pg.ref.tokens, signal: pg.signal, heldUntil: () => pg.heldUntil(), pg };
    return held;
  }

  async release(held: NamedHeld, entry: string): Promise<"held" | "freed" | "gone"> {
    return (await this.#locks.release((held as PgNamedHeld).pg, entry)).status;
  }

  extend(held: NamedHeld, ttlMs: number): Promise<number> {
    return this.#locks.extend((held as PgNamedHeld).pg, ttlMs);
  }

  async check(held: NamedHeld): Promise<boolean> {
    const { ref } = (held as PgNamedHeld).pg;
    return (await this.#store.check(ref.names, ref.hold)).live;
  }

  async close(): Promise<void> {
    this.#locks.close();
    this.#store.close();
  }
}
