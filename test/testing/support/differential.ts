/**
 * Runs the same commands on a real redis-server and on MemoryRedis and compares replies and the
 * resulting keyspace.
 *
 * Time: the real server's clock cannot be stopped, so each step reads its TIME just before (t0)
 * and just after (t1) the command. Two in-memory servers, whose clocks are set to t0 and t1, run
 * the same command from the same state. The real server ran it at some instant between, so
 * every part of its reply and state must equal one of the two in-memory results or, for
 * numbers, lie between them; a part that does not depend on time must therefore be equal. When
 * the real server ran the command in the same window in which a key expired or a PTTL ticked, its
 * result lies between two in-memory results at instants inside the window, not between the
 * window's ends: such a step is run again, from the same state, at every millisecond boundary in
 * the window (and just before each), and passes if the real result lies between two neighbours.
 * After each step the in-memory servers are loaded with the real server's state, so
 * time-dependent differences never pile up.
 */
import assert from "node:assert/strict";
import { MemoryRedisServer, type ServerConnection } from "../../../src/testing/memory-redis.js";
import type { MessageSink } from "../../../src/testing/memory-redis.js";
import { redisVersion, startStandalone, type RedisServer } from "../../helpers/redis-topology.js";
import { RespClient, wireOf, type Wire } from "./resp-client.js";

export class ManualClock {
  value = 0;
  now(): number {
    return this.value;
  }
}

interface KeyDump {
  readonly type: string;
  /** In an order-free form, for comparing. */
  readonly value: Wire;
  /** As read, for loading (a hash keeps its field order). */
  readonly raw: Wire;
  /** PEXPIRETIME: absolute ms, or -1. */
  readonly expireAt: number;
}
type Dump = Map<string, KeyDump>;
interface Memory { server: MemoryRedisServer; clock: ManualClock; conn: ServerConnection; control: ServerConnection }
interface Outcome { reply: Wire; state: Dump }

/** A Lua script the real server runs to report its whole keyspace in one round trip. */
const DUMP = `
local out = {redis.call('TIME')}
for _, k in ipairs(redis.call('KEYS', '*')) do
  local ty = redis.call('TYPE', k)['ok']
  local v
  if ty == 'string' then v = redis.call('GET', k)
  elseif ty == 'hash' then v = redis.call('HGETALL', k)
  elseif ty == 'list' then v = redis.call('LRANGE', k, 0, -1)
  elseif ty == 'set' then v = redis.call('SMEMBERS', k)
  elseif ty == 'zset' then v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif ty == 'stream' then v = redis.call('XRANGE', k, '-', '+') end
  out[#out + 1] = {k, ty, v, redis.call('PEXPIRETIME', k)}
end
return out`;

/** Replies whose order Redis does not define. */
const UNORDERED = new Set(["KEYS", "SMEMBERS", "HKEYS"]);
const PAIRS = new Set(["HGETALL"]);

function sortWire(w: Wire): Wire {
  return Array.isArray(w) ? [...w].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) : w;
}

function pairs(w: Wire): Wire {
  if (!Array.isArray(w)) return w;
  const out: Wire[] = [];
  for (let i = 0; i + 1 < w.length; i += 2) out.push([w[i] as Wire, w[i + 1] as Wire]);
  return sortWire(out);
}

/**
 * What must be equal of a reply whose form Redis leaves open, or whose wording is Lua's: JSON made
 * by cjson (its objects' key order follows the Lua table's hash order, which differs between Lua
 * 5.1 and 5.4) with its keys sorted; a Lua runtime or compile error by where the script raised
 * it (Lua 5.4 words its errors differently from 5.1), not its wording.
 */
export function canonical(w: Wire): Wire {
  if (Array.isArray(w)) return w.map(canonical);
  if (typeof w === "string" && /^[[{]/.test(w)) {
    try {
      const sortKeys = (v: unknown): unknown => Array.isArray(v) ? v.map(sortKeys) : v !== null && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sortKeys(x)])) : v;
      return `json:${JSON.stringify(sortKeys(JSON.parse(Buffer.from(w, "latin1").toString("utf8"))))}`;
    } catch {
      return w;
    }
  }
  if (w !== null && typeof w === "object" && "error" in w) {
    const m = /^ERR user_script:(\d+): .* (script: [0-9a-f]{40}, on @user_script:\d+\.)$/.exec(w.error);
    if (m) return { error: `ERR user_script:${m[1]}: (a Lua error) ${m[2]}` };
    const compile = /^(ERR Error compiling script \(new function\): user_script:\d+:) /.exec(w.error);
    if (compile) return { error: `${compile[1]} (Lua's words)` };
  }
  return w;
}

/** A reply with an order-free result put in a fixed order. */
export function normalize(command: string, w: Wire): Wire {
  const name = command.toUpperCase();
  if (UNORDERED.has(name)) return sortWire(w);
  if (PAIRS.has(name)) return pairs(w);
  return canonical(w);
}

const NUMERIC = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/;

/**
 * Durations from 1 s up are what a script reads back with PTTL; below that a number is a count or
 * a small counter, which must match exactly, except the one short life the generated calls use.
 */
const PTTL_SCALE_MS = 1_000;

/**
 * The short life (ms) generated calls give a key, so that it ends before the next call. It is not
 * a count any script answers (0 to 3), so a PTTL read back as one less is told from a wrong count.
 */
export const SHORT_LIFE_MS = 7;

function compareNumbers(x: string | number, lo: string | number, hi: string | number, slackMs = 0): boolean {
  if (typeof x === "string" && /^-?\d+$/.test(x) && /^-?\d+$/.test(String(lo)) && /^-?\d+$/.test(String(hi))) {
    const [a, b] = [BigInt(lo), BigInt(hi)].sort((p, q) => (p < q ? -1 : p > q ? 1 : 0));
    return BigInt(x) >= (a as bigint) && BigInt(x) <= (b as bigint);
  }
  const [a, b] = [Number(lo), Number(hi)].sort((p, q) => p - q) as [number, number];
  const low = slackMs > 0 && (a >= PTTL_SCALE_MS || a === SHORT_LIFE_MS) ? a - slackMs : a;
  return Number(x) >= low && Number(x) <= b;
}

/**
 * True if `real` equals `a` or `b` or, part by part, lies between them. `slackMs` lets a
 * duration of the real reply fall that much below both: before Redis 7.2 a script's clock is not
 * frozen, so a PTTL read back after a PEXPIRE in the same script can be a millisecond short when
 * the script crosses a millisecond (the double, like Redis 7.2, reads the script's start time).
 */
export function between(real: Wire, a: Wire, b: Wire, slackMs = 0): boolean {
  if (isDeepEqual(real, a) || isDeepEqual(real, b)) return true;
  if (typeof real === "number" && typeof a === "number" && typeof b === "number") return compareNumbers(real, a, b, slackMs);
  if (typeof real === "string" && typeof a === "string" && typeof b === "string" && a !== b) {
    if (NUMERIC.test(real) && NUMERIC.test(a) && NUMERIC.test(b)) return compareNumbers(real, a, b);
    // Stream ids made from the clock: "<ms>-<seq>".
    const ids = [real, a, b].map((s) => /^(\d+)-(\d+)$/.exec(s));
    if (ids.every(Boolean)) {
      const key = (m: RegExpExecArray | null): bigint => BigInt((m as RegExpExecArray)[1] as string) * (1n << 64n) + BigInt((m as RegExpExecArray)[2] as string);
      const [x, p, q] = ids.map(key) as [bigint, bigint, bigint];
      return x >= (p < q ? p : q) && x <= (p < q ? q : p);
    }
    // Records with clock readings inside ("<deadline ms>|<ttl>|…", a queue ticket): the same text
    // around the numbers, and each number between.
    const parts = [real, a, b].map((s) => s.split(/(\d+)/));
    const [rp, ap, bp] = parts as [string[], string[], string[]];
    if (rp.length > 1 && rp.length === ap.length && ap.length === bp.length) {
      return rp.every((r, i) => (i % 2 === 1 ? compareNumbers(r, ap[i] as string, bp[i] as string) : r === ap[i] && r === bp[i]));
    }
    return false;
  }
  if (Array.isArray(real) && Array.isArray(a) && Array.isArray(b) && real.length === a.length && a.length === b.length) {
    return real.every((r, i) => between(r, a[i] as Wire, b[i] as Wire, slackMs));
  }
  return false;
}

function isDeepEqual(x: Wire, y: Wire): boolean {
  try {
    assert.deepStrictEqual(x, y);
    return true;
  } catch {
    return false;
  }
}

function dumpValue(type: string, value: Wire): Wire {
  if (type === "hash") return pairs(value);
  if (type === "set") return sortWire(value);
  return value;
}

export interface StepOutcome {
  readonly real: Wire;
  readonly memory: Wire;
}

export class Differential {
  readonly server: RedisServer;
  readonly version: string;
  readonly #real: RespClient;
  readonly #control: RespClient;
  readonly #memory: Memory[];
  /** The keyspace every in-memory server was loaded with before the current step. */
  #before: Dump = new Map();
  readonly #epochMs: number;
  readonly #listeners: RespClient[] = [];
  readonly #sinks = new Map<string, MessageSink[]>();
  /** Names of the commands queued since MULTI, to put EXEC's replies in a fixed order. */
  #queued: string[] | undefined;
  #window: [number, number] = [0, 0];
  steps = 0;
  /** Longest t1 - t0 seen, in µs (how far apart the two in-memory runs were). */
  widestStepUs = 0;

  private constructor(server: RedisServer, real: RespClient, control: RespClient, version: string, epochMs: number) {
    this.server = server;
    this.#real = real;
    this.#control = control;
    this.version = version;
    this.#epochMs = epochMs;
    // At t0, at t1, and a probe that reruns a step at instants between.
    this.#memory = [0, 1, 2].map(() => {
      const clock = new ManualClock();
      const memory = new MemoryRedisServer({ clock, epochMs, version });
      return { server: memory, clock, conn: memory.connect(), control: memory.connect() };
    });
  }

  static async start(): Promise<Differential> {
    await MemoryRedisServer.ready();
    const server = await startStandalone();
    const real = await RespClient.connect(server.port);
    const control = await RespClient.connect(server.port);
    const time = (await control.send(["TIME"])) as [string, string];
    return new Differential(server, real, control, redisVersion().join("."), Number(time[0]) * 1000);
  }

  /** Empties the keyspace. */
  async reset(): Promise<void> {
    await this.step(["FLUSHALL"]);
  }

  async stop(): Promise<void> {
    this.#real.close();
    this.#control.close();
    for (const l of this.#listeners) l.close();
    await this.server.stop();
  }

  async #timeUs(): Promise<number> {
    const [s, us] = (await this.#control.send(["TIME"])) as [string, string];
    return Number(s) * 1e6 + Number(us);
  }

  #setClock(i: number, us: number): void {
    (this.#memory[i] as { clock: ManualClock }).clock.value = us / 1000 - this.#epochMs;
  }

  /** Runs `argv` (byte strings) on both, asserts that they agree, and returns both replies. */
  async step(argv: readonly string[], label = ""): Promise<StepOutcome> {
    this.steps++;
    const inTransaction = this.#queued !== undefined || /^(MULTI|EXEC)$/i.test(argv[0] ?? "");
    const t0 = await this.#timeUs();
    const rawReal = await this.#real.send(argv);
    const t1 = await this.#timeUs();
    this.widestStepUs = Math.max(this.widestStepUs, t1 - t0);
    this.#window = [t0, t1];
    const rawMemory = [0, 1].map((i) => {
      this.#setClock(i, i === 0 ? t0 : t1);
      const m = this.#memory[i] as { server: MemoryRedisServer; conn: ServerConnection };
      return wireOf(m.server.execute(m.conn, argv));
    }) as [Wire, Wire];
    this.#teachProbe(argv);
    const order = this.#orderOf(argv[0] ?? "", rawReal);
    const realReply = order(rawReal);
    const memoryReplies = rawMemory.map(order) as [Wire, Wire];
    const shown = argv.map((a) => (a.length > 2000 ? `<${a.length} bytes>` : a));
    const what = `${label}${label ? ": " : ""}${JSON.stringify(shown).slice(0, 3000)}`;
    const { dump: realState, atUs } = await this.#realDump();
    const [major, minor] = redisVersion();
    const clockMovesInScripts = major < 7 || (major === 7 && minor < 2);
    const slackMs = clockMovesInScripts && /^(EVAL|EVALSHA|FCALL)$/i.test(argv[0] ?? "") ? Math.ceil((t1 - t0) / 1000) : 0;
    const agrees = (a: { reply: Wire; state: Dump }, b: { reply: Wire; state: Dump }): boolean =>
      between(realReply, a.reply, b.reply, slackMs) && this.#stateProblem(realState, atUs, a.state, b.state, what) === undefined;
    const ends = [0, 1].map((i) => ({ reply: memoryReplies[i] as Wire, state: this.#memoryDump(i) })) as [Outcome, Outcome];
    // A command inside MULTI / EXEC is queued on its connection and cannot be run again alone.
    const settled = agrees(...ends) || (!inTransaction && this.#agreesInside(argv, order, agrees));
    this.#load(realState);
    this.#before = realState;
    if (!settled) {
      // The reply is judged first, then the state, as the window's two ends saw them.
      if (!between(realReply, memoryReplies[0], memoryReplies[1], slackMs)) {
        assert.fail(`reply differs for ${what}\n  redis-server: ${JSON.stringify(realReply)}\n  MemoryRedis:  ${JSON.stringify(memoryReplies[0])}` +
          (isDeepEqual(memoryReplies[0], memoryReplies[1]) ? "" : `\n  (at t1:       ${JSON.stringify(memoryReplies[1])})`));
      }
      assert.fail(this.#stateProblem(realState, atUs, ends[0].state, ends[1].state, what) ?? `after ${what}: no two neighbouring instants agree`);
    }
    return { real: realReply, memory: memoryReplies[0] };
  }

  /** Gives the probe the scripts and functions the other servers learned from `argv` (it runs steps only on demand). */
  #teachProbe(argv: readonly string[]): void {
    const probe = this.#memory[2] as Memory;
    const name = (argv[0] ?? "").toUpperCase();
    if ((name === "EVAL" || name === "EVAL_RO") && argv[1] !== undefined) probe.server.execute(probe.control, ["SCRIPT", "LOAD", argv[1]]);
    else if (name === "SCRIPT" || name === "FUNCTION") probe.server.execute(probe.control, [...argv]);
  }

  /**
   * Runs the step on the probe, from the state before it, at each millisecond boundary inside the
   * window and just before it; true if the real outcome lies between two neighbouring instants.
   */
  #agreesInside(argv: readonly string[], order: (w: Wire) => Wire, agrees: (a: Outcome, b: Outcome) => boolean): boolean {
    const [t0, t1] = this.#window;
    const instants = [t0];
    for (let ms = Math.floor(t0 / 1000) + 1; ms * 1000 <= t1; ms++) instants.push(ms * 1000 - 1, ms * 1000);
    instants.push(t1);
    const probe = this.#memory[2] as { server: MemoryRedisServer; conn: ServerConnection };
    let previous: Outcome | undefined;
    for (const us of instants) {
      this.#loadInto(probe as Memory, this.#before);
      this.#setClock(2, us);
      const outcome = { reply: order(wireOf(probe.server.execute(probe.conn, argv))), state: this.#memoryDump(2) };
      if (previous && agrees(previous, outcome)) return true;
      previous = outcome;
    }
    return false;
  }

  /** How to normalize this step's replies; follows MULTI / EXEC on the command connection. */
  #orderOf(command: string, real: Wire): (w: Wire) => Wire {
    const name = command.toUpperCase();
    if (name === "MULTI" && this.#queued === undefined) this.#queued = [];
    else if (name === "DISCARD") this.#queued = undefined;
    else if (name === "EXEC") {
      const names = this.#queued ?? [];
      this.#queued = undefined;
      return (w) => (Array.isArray(w) ? w.map((item, i) => normalize(names[i] ?? "", item)) : w);
    } else if (this.#queued && isDeepEqual(real, { status: "QUEUED" })) this.#queued.push(name);
    return (w) => normalize(command, w);
  }

  async #realDump(): Promise<{ dump: Dump; atUs: number }> {
    const out = (await this.#control.send(["EVAL", DUMP, "0"])) as Wire[];
    const [time, ...keys] = out as [[string, string], ...[string, string, Wire, number][]];
    const dump: Dump = new Map();
    for (const [k, type, value, expireAt] of keys) dump.set(k, { type, value: dumpValue(type, value), raw: value, expireAt });
    return { dump, atUs: Number(time[0]) * 1e6 + Number(time[1]) };
  }

  #memoryDump(i: number): Dump {
    const m = this.#memory[i] as { server: MemoryRedisServer; control: ServerConnection };
    const run = (...argv: string[]): Wire => wireOf(m.server.execute(m.control, argv));
    const dump: Dump = new Map();
    for (const k of run("KEYS", "*") as string[]) {
      const type = (run("TYPE", k) as { status: string }).status;
      const read: Record<string, string[]> = {
        string: ["GET", k], hash: ["HGETALL", k], list: ["LRANGE", k, "0", "-1"], set: ["SMEMBERS", k],
        zset: ["ZRANGE", k, "0", "-1", "WITHSCORES"], stream: ["XRANGE", k, "-", "+"],
      };
      const raw = run(...(read[type] as string[]));
      dump.set(k, { type, value: dumpValue(type, raw), raw, expireAt: run("PEXPIRETIME", k) as number });
    }
    return dump;
  }

  /** The first difference between the real keyspace, read at `atUs`, and two in-memory ones, or undefined. */
  #stateProblem(real: Dump, atUs: number, a: Dump, b: Dump, what: string): string | undefined {
    const atMs = Math.floor(atUs / 1000);
    for (const key of new Set([...real.keys(), ...a.keys(), ...b.keys()])) {
      const r = real.get(key);
      const ma = a.get(key);
      const mb = b.get(key);
      if (!r) {
        // Gone on the real server: fine if one in-memory run has no such key either, or has one
        // that expired by the time the real state was read (the real run may have seen the key
        // as the run at t0 did, and then it expired; or as the run at t1 did).
        const goneBy = (m: KeyDump | undefined): boolean => !m || (m.expireAt !== -1 && m.expireAt <= atMs);
        if (goneBy(ma) || goneBy(mb)) continue;
        return `after ${what}\n  key ${JSON.stringify(key)} exists in MemoryRedis (${JSON.stringify(ma ?? mb)}) but not in redis-server` +
          ` (its state read at ${atUs} µs; step from ${this.#window.join(" to ")} µs)`;
      }
      const wire = (d: KeyDump | undefined): Wire => (d ? [d.type, canonical(d.value), d.expireAt] : null);
      // A script that reads TIME and then sets a relative expiry: the real server reads its clock
      // at each command, MemoryRedis once per step. The expiry may then lie up to the step's
      // width past what MemoryRedis computed at t1.
      const slackMs = Math.ceil((this.#window[1] - this.#window[0]) / 1000);
      const later = (d: KeyDump | undefined): Wire => (d && d.expireAt !== -1 ? [d.type, d.value, d.expireAt + slackMs] : wire(d));
      if (!between(wire(r), wire(ma), wire(mb)) && !between(wire(r), wire(ma), later(mb))) {
        return `after ${what}\n  key ${JSON.stringify(key)} differs\n  redis-server: ${JSON.stringify(wire(r))}\n  MemoryRedis:  ${JSON.stringify(wire(ma))}` +
          (isDeepEqual(wire(ma), wire(mb)) ? "" : `\n  (at t1:       ${JSON.stringify(wire(mb))})`);
      }
    }
    return undefined;
  }

  /** Loads every in-memory server with the real server's keyspace. */
  #load(dump: Dump): void {
    for (const m of this.#memory) this.#loadInto(m, dump);
  }

  #loadInto(m: Memory, dump: Dump): void {
    // Loaded at the epoch: PEXPIREAT of an instant that is "now" would delete the key at once,
    // while the real server keeps it until its clock passes that instant.
    m.clock.value = 0;
    const run = (...argv: string[]): void => {
      const reply = wireOf(m.server.execute(m.control, argv));
      if (reply !== null && typeof reply === "object" && "error" in reply) throw new Error(`loading ${argv.join(" ")}: ${reply.error}`);
    };
    run("FLUSHALL");
    for (const [k, { type, raw: value, expireAt }] of dump) {
      const items = value as Wire[];
      if (type === "string") run("SET", k, value as string);
      else if (type === "hash") run("HSET", k, ...(items as string[]));
      else if (type === "list") run("RPUSH", k, ...(items as string[]));
      else if (type === "set") run("SADD", k, ...(items as string[]));
      else if (type === "zset") {
        const args: string[] = [];
        for (let i = 0; i < items.length; i += 2) args.push(items[i + 1] as string, items[i] as string);
        run("ZADD", k, ...args);
      } else if (type === "stream") {
        for (const [id, fields] of items as [string, string[]][]) run("XADD", k, id, ...fields);
      }
      if (expireAt !== -1) run("PEXPIREAT", k, String(expireAt));
    }
  }

  /** Adds (or removes) an in-memory receiver of `channel`, mirroring a subscription made on the real server. */
  listenInMemory(channel: string, on: boolean): void {
    let sinks = this.#sinks.get(channel);
    if (!sinks) this.#sinks.set(channel, (sinks = []));
    if (on) {
      const sink = { deliver: () => {} };
      sinks.push(sink);
      for (const m of this.#memory) m.server.subscribe(sink, channel, false);
    } else {
      const sink = sinks.pop();
      if (sink) for (const m of this.#memory) m.server.unsubscribe(sink, channel, false);
    }
  }

  /** Subscribes one connection on each side to `channel`, so PUBLISH counts a receiver on both. */
  async listen(channel: string): Promise<void> {
    const subscriber = await RespClient.connect(this.server.port);
    this.#listeners.push(subscriber);
    await subscriber.send(["SUBSCRIBE", channel]);
    for (const m of this.#memory) m.server.subscribe({ deliver: () => {} }, channel, false);
  }
}
