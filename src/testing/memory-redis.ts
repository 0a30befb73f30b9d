/**
 * The in-memory Redis server: a keyspace with lazy expiry on an injectable clock, a command
 * table with Redis 7 semantics and error messages, pub/sub fan-out, and Lua scripting through
 * ./redis/scripting.ts. Everything here is synchronous: one command (or one whole script) runs at
 * a time. Making replies asynchronous, and faults, is the job of the adapter (memory-adapter.ts).
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { CommandContext, ConnectionView, ServerView } from "./redis/command.js";
import { infoText, lookupCommand } from "./redis/commands.js";
import { Keyspace } from "./redis/keyspace.js";
import { loadLua } from "./redis/lua-runtime.js";
import { CommandError, ErrorReply, type Reply } from "./redis/reply.js";
import { ScriptEngine } from "./redis/scripting.js";

/** A source of time in ms. Only differences matter, unless `epochMs` is left to its default. */
export interface Clock {
  /** Milliseconds; only differences matter. */
  now(): number;
}

/** How a new in-memory server behaves. */
export interface MemoryRedisServerOptions {
  /** Time source for TIME and expiry. Default: `performance.now()`. */
  readonly clock?: Clock;
  /**
   * Wall-clock ms at which `clock.now()` reads 0, so TIME looks like wall time. Default: the
   * process's `performance.timeOrigin` with the default clock, else 2026-01-01T00:00:00Z.
   */
  readonly epochMs?: number;
  /** What INFO reports as redis_version; 7.2 and later also print doubles in their shortest form. Default "7.2.0". */
  readonly version?: string;
  /** How many replicas WAIT reports. Default 0. */
  readonly replicas?: number;
  /** CONFIG GET values, merged over the defaults (appendonly no, save "", maxmemory-policy noeviction, ...). */
  readonly config?: Readonly<Record<string, string>>;
}

// Start loading the Lua runtime now: the first script of a process then rarely waits for it.
loadLua().catch(() => {});
const DEFAULT_CONFIG = { appendonly: "no", save: "", maxmemory: "0", "maxmemory-policy": "noeviction", "min-replicas-to-write": "0" };
/** Commands only a subscriber connection (the adapter's createSubscriber) sends. */
const SUBSCRIBER_ONLY = /^(p|s)?(un)?subscribe$/;

/** Who receives published messages: the adapter's subscriber connections. */
export interface MessageSink {
  deliver(channel: string, message: string): void;
}

/** A client connection's state on the server. */
export class ServerConnection implements ConnectionView {
  /** The server's client id of this connection. */
  readonly id: number;

  constructor(id: number) {
    this.id = id;
  }
}

/** The in-memory server behind one or more `MemoryRedis` connections. */
export class MemoryRedisServer {
  /** What INFO reports as redis_version. */
  readonly version: string;
  readonly #clock: Clock;
  readonly #epochMs: number;
  readonly #keyspace: Keyspace;
  readonly #scripts: ScriptEngine;
  readonly #view: ServerView;
  /** Receivers by channel; SPUBLISH's channels ("s" before the name) are apart from PUBLISH's ("c"), as in Redis. */
  readonly #channels = new Map<string, Set<MessageSink>>();
  readonly #startedUs: number;
  #nextClientId = 1;
  /** The instant a running script started (no key expires for it after that). */
  #scriptNow: number | undefined;

  /**
   * Resolves once scripts can run (wasmoon, the Lua in WebAssembly, is loaded: once per process).
   * MemoryRedis waits for it by itself; call it before running scripts through `execute`.
   * Rejects, saying how to install it, when wasmoon is not installed.
   */
  static ready(): Promise<void> {
    return loadLua();
  }

  constructor(options: MemoryRedisServerOptions = {}) {
    this.#clock = options.clock ?? { now: () => performance.now() };
    this.#epochMs = options.epochMs ?? (options.clock ? Date.UTC(2026, 0, 1) : performance.timeOrigin);
    this.version = options.version ?? "7.2.0";
    const [major = 0, minor = 0] = this.version.split(".").map(Number);
    const shortestDoubles = major > 7 || (major === 7 && minor >= 2);
    const config = new Map(Object.entries({ ...DEFAULT_CONFIG, ...options.config }));
    this.#keyspace = new Keyspace(() => this.#scriptNow ?? this.nowMs());
    this.#scripts = new ScriptEngine({ version: this.version, shortestDoubles, dispatch: (ctx, argv) => this.#dispatch(ctx.conn, argv, true) });
    const replicas = options.replicas ?? 0;
    const runId = randomBytes(20).toString("hex");
    this.#startedUs = this.timeUs();
    this.#view = {
      version: this.version, shortestDoubles, config, replicas,
      timeUs: () => this.timeUs(),
      info: (sections) => infoText(sections, {
        version: this.version, runId, timeUs: this.timeUs(), uptimeS: Math.floor((this.timeUs() - this.#startedUs) / 1e6), keys: this.#keyspace.size, replicas,
      }, config),
      publish: (channel, message, sharded) => {
        const sinks = this.#channels.get(`${sharded ? "s" : "c"}${channel}`) ?? new Set();
        for (const sink of sinks) sink.deliver(channel, message);
        return sinks.size;
      },
      loadScript: (source) => this.#scripts.load(source),
      scriptExists: (sha) => this.#scripts.exists(sha),
      flushScripts: () => this.#scripts.flush(),
      evalScript: (ctx, source, sha, keys, args) => {
        // As Redis 7 does, a running script sees no key expire after it started.
        this.#scriptNow = this.nowMs();
        try {
          return this.#scripts.eval(ctx, source, sha, keys, args);
        } finally {
          this.#scriptNow = undefined;
        }
      },
    };
  }

  /** Microseconds since the epoch (TIME). */
  timeUs(): number {
    return Math.round((this.#epochMs + this.#clock.now()) * 1000);
  }

  /** Whole ms since the epoch: what TTLs count from and new expiries are set from. */
  nowMs(): number {
    return Math.floor(this.timeUs() / 1000);
  }

  /** Runs `fn` after `ms` on the server's clock: its own timers when it has them (a VirtualClock), else Node's. */
  setTimer(fn: () => void, ms: number): void {
    const clock = this.#clock as Partial<{ setTimeout(fn: () => void, ms: number): unknown }>;
    if (typeof clock.setTimeout === "function") clock.setTimeout(fn, ms);
    else setTimeout(fn, ms);
  }

  /** A new client connection. */
  connect(): ServerConnection {
    return new ServerConnection(this.#nextClientId++);
  }

  /** Runs one command from a client and returns its reply (a script needs `ready()` to have resolved). */
  execute(conn: ServerConnection, argv: readonly string[]): Reply {
    return this.#dispatch(conn, argv, false);
  }

  /** Adds `sink` to the receivers of `channel` (sharded: SPUBLISH's, a space of channels apart from PUBLISH's). */
  subscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    const name = `${sharded ? "s" : "c"}${channel}`;
    this.#channels.set(name, (this.#channels.get(name) ?? new Set()).add(sink));
  }

  /** Removes `sink` from the receivers of `channel`. */
  unsubscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    this.#channels.get(`${sharded ? "s" : "c"}${channel}`)?.delete(sink);
  }

  #dispatch(conn: ConnectionView, argv: readonly string[], inScript: boolean): Reply {
    const name = (argv[0] ?? "").toLowerCase();
    if (SUBSCRIBER_ONLY.test(name)) {
      return new ErrorReply(inScript ? "ERR This Redis command is not allowed from script"
        : `ERR MemoryRedis: ${name.toUpperCase()} is only available on a subscriber connection (createSubscriber)`);
    }
    const spec = lookupCommand(argv, inScript);
    if (spec instanceof ErrorReply) return spec;
    if (inScript && spec.noscript) return new ErrorReply("ERR This Redis command is not allowed from script");
    const ctx: CommandContext = { ks: this.#keyspace, server: this.#view, conn, now: () => this.nowMs(), inScript };
    try {
      return spec.run?.(ctx, argv) ?? null;
    } catch (error) {
      if (error instanceof CommandError) return error.reply;
      throw error;
    }
  }
}
