/**
 * The fast tier's world: one in-memory server and one virtual clock shared by the server and by
 * every Surelock on it (each a "process" with a connection of its own). Time moves only when a
 * test moves it, so every instant a test names is hit exactly; between timers the in-memory
 * network settles, so a test sees the same interleaving on every run. Each connection's commands
 * are recorded with the virtual instant they were sent at, and a test may put a fault on them.
 */
import assert from "node:assert/strict";
import { Surelock, type Lease, type SurelockOptions } from "../../src/index.js";
import { LUA } from "../../src/scripts/lua.generated.js";
import { MemoryRedis, VirtualClock, type Fault } from "../../src/testing/index.js";
import { inspectable, traces } from "../helpers/traces.js";

/** Script names by SHA1 (only to name what goes over the wire; the library is driven through its public API). */
const SCRIPTS = new Map<string, string>(Object.values(LUA).map((s) => [s.sha, s.name]));

/** One command as it left a connection. */
export interface Sent {
  /** Virtual instant it was sent at. */
  readonly at: number;
  /** Upper-case command name. */
  readonly name: string;
  /** For EVALSHA / EVAL: the script's name ("acquire", "keepalive", ...). */
  readonly script: string | undefined;
  /** For scripts: KEYS and ARGV. */
  readonly keys: readonly string[];
  readonly argv: readonly string[];
}

/** A connection's wire: what it sent, and the fault a test puts on what it sends next. */
export class Wire {
  readonly sent: Sent[] = [];
  /** Decides a fault per command (undefined: it passes). */
  fault: ((call: Sent) => Fault | undefined) | undefined;

  constructor(redis: MemoryRedis, clock: VirtualClock) {
    redis.intercept((call) => {
      const script = call.sha === undefined ? undefined : SCRIPTS.get(call.sha);
      const numKeys = script === undefined ? 0 : Number(call.args[1]);
      const sent: Sent = {
        at: clock.now(), name: call.name, script,
        keys: script === undefined ? [] : call.args.slice(2, 2 + numKeys),
        argv: script === undefined ? [] : call.args.slice(2 + numKeys),
      };
      this.sent.push(sent);
      return this.fault?.(sent);
    });
  }

  /** Calls of `script` sent at or after `fromAt`. */
  calls(script: string, fromAt = -Infinity): Sent[] {
    return this.sent.filter((s) => s.script === script && s.at >= fromAt);
  }
}

/** Arity (ARGV slots) and KEYS of each keepalive item kind (keepalive.lua's header). */
const ITEM: Record<string, { argc: number; keys: number }> = { x: { argc: 3, keys: 1 }, s: { argc: 3, keys: 3 }, q: { argc: 5, keys: 3 }, Q: { argc: 7, keys: 5 } };

/** The items of one keepalive call: renewals ('x', 's') and ticket refreshes ('q', 'Q', 'm'), each with its first key. */
export function items(call: Sent): { kind: string; key: string }[] {
  const out: { kind: string; key: string }[] = [];
  for (let i = 0, k = 0; i < call.argv.length;) {
    const kind = call.argv[i] as string;
    // A multi-key waiter ('m'): its key count is its last argument, three KEYS per key.
    const shape = kind === "m" ? { argc: 6, keys: 3 * Number(call.argv[i + 5]) } : ITEM[kind];
    assert.ok(shape, `keepalive item of unknown kind ${kind}`);
    out.push({ kind, key: call.keys[k] as string });
    i += shape.argc;
    k += shape.keys;
  }
  return out;
}

/** A Surelock of the world, on a connection of its own. */
export interface Proc {
  readonly locks: Surelock;
  readonly redis: MemoryRedis;
  readonly wire: Wire;
}

export class World {
  readonly clock = new VirtualClock();
  /** The server's first connection; every process gets a duplicate. */
  readonly #redis = new MemoryRedis({ clock: this.clock });
  /** A connection that only reads state for the test: never faulted, never queued behind a gate. */
  readonly observer = this.#redis.duplicate("observer");
  readonly #procs: Proc[] = [];
  /** Every call a test tracked: each must have settled once the processes are closed. */
  readonly #tracked: Tracked<unknown>[] = [];

  /** A world whose scripts are cached already, so every script call is one EVALSHA. */
  static async create(): Promise<World> {
    const world = new World();
    for (const script of Object.values(LUA)) await world.observer.command(["SCRIPT", "LOAD", script.lua]);
    return world;
  }

  /** Another process: a Surelock on a new connection, on the shared clock. Default ttl 3 000 ms. */
  proc(options: Omit<Partial<SurelockOptions>, "redis" | "clock"> = {}): Proc {
    const redis = this.#redis.duplicate();
    const wire = new Wire(redis, this.clock);
    const locks = new Surelock({ ttl: 3_000, ...options, redis, clock: this.clock });
    const proc = { locks, redis, wire };
    this.#procs.push(proc);
    return proc;
  }

  /** Watches a call from now on (its rejection is handled: it never goes unhandled); close() fails if it never settled. */
  track<T>(promise: Promise<T>): Tracked<T> {
    const t = track(this.clock, promise);
    this.#tracked.push(t);
    return t;
  }

  get now(): number {
    return this.clock.now();
  }

  /** Moves virtual time to the instant `at` (never back). */
  async to(at: number): Promise<void> {
    assert.ok(at >= this.clock.now(), `cannot go back from ${this.clock.now()} to ${at}`);
    await this.clock.advance(at - this.clock.now());
  }

  /** Moves time `stepMs` (default 1 ms) at a time to `at`, checking `invariant` after every step. */
  async stepTo(at: number, invariant: (now: number) => Promise<void> | void, stepMs = 1): Promise<void> {
    while (this.clock.now() < at) {
      await this.clock.advance(Math.min(stepMs, at - this.clock.now()));
      await invariant(this.clock.now());
    }
  }

  /** The mutex `key`'s hash as Redis has it now (empty when nothing is there) and its PTTL. */
  async lock(key: string): Promise<{ fields: Record<string, string>; pttl: number }> {
    const flat = (await this.observer.command(["HGETALL", `surelock:{${key}}:lock`])) as string[];
    const fields: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    return { fields, pttl: Number(await this.observer.command(["PTTL", `surelock:{${key}}:lock`])) };
  }

  /** The mutex `key`'s queue of tickets, head first. */
  async queue(key: string): Promise<string[]> {
    return (await this.observer.command(["LRANGE", `surelock:{${key}}:queue`, 0, -1])) as string[];
  }

  /** Holds, tickets and keys without a TTL that surelock left in Redis (empty when clean). */
  traces(): Promise<string[]> {
    return traces(inspectable(this.observer));
  }

  /**
   * Closes every process; each close must settle within its bound (the command timeout), in
   * virtual time, and so must every call the test tracked. No key may be left without a TTL.
   */
  async close(): Promise<void> {
    const closing = track(this.clock, Promise.all(this.#procs.map((p) => p.locks.close())));
    for (let i = 0; i < 10 && !closing.settled; i++) await this.clock.advance(1_000);
    assert.ok(closing.settled && closing.ok, "close() settles within its bound");
    await this.clock.settle();
    this.#tracked.forEach((t, i) => assert.ok(t.settled, `tracked call #${i} settled`));
    const keys = (await this.observer.command(["KEYS", "surelock:*"])) as string[];
    for (const key of keys) assert.notEqual(await this.observer.command(["PTTL", key]), -1, `${key} has no TTL`);
  }
}

/** A promise the test resolves when it chooses (Node 20 has no Promise.withResolvers). */
export function later(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

/** How and when (virtual instant) a promise settled, as far as it has. */
export interface Tracked<T> {
  readonly settled: boolean;
  readonly ok: boolean;
  readonly at: number | undefined;
  readonly value: T | undefined;
  readonly error: unknown;
}

function track<T>(clock: VirtualClock, promise: Promise<T>): Tracked<T> {
  const t: { settled: boolean; ok: boolean; at: number | undefined; value: T | undefined; error: unknown } = {
    settled: false, ok: false, at: undefined, value: undefined, error: undefined,
  };
  promise.then(
    (value) => Object.assign(t, { settled: true, ok: true, at: clock.now(), value }),
    (error: unknown) => Object.assign(t, { settled: true, ok: false, at: clock.now(), error }),
  );
  return t;
}

/** The instant (virtual) a lease's signal aborts, and its reason, once it has. */
export function watchLoss(clock: VirtualClock, lease: Lease): { at: number | undefined; reason: unknown } {
  const seen: { at: number | undefined; reason: unknown } = { at: undefined, reason: undefined };
  const signal = lease.signal;
  if (signal.aborted) return { at: clock.now(), reason: signal.reason };
  signal.addEventListener("abort", () => Object.assign(seen, { at: clock.now(), reason: signal.reason }), { once: true });
  return seen;
}

/** Asserts an error's stable code. */
export function assertCode(error: unknown, code: string): void {
  assert.equal((error as { code?: unknown } | undefined)?.code, code, `expected ${code}, got ${String(error)}`);
}
