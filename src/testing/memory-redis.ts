/**
 * The in-memory Redis server: a keyspace with lazy expiry on an injectable clock, a command
 * table with Redis 7 semantics and error messages, MULTI/EXEC per connection, pub/sub fan-out,
 * and Lua scripting through ./redis/scripting.ts. Everything here is synchronous: one command
 * (or one whole script) runs at a time. Making replies asynchronous, and faults, is the job of
 * the adapter (memory-adapter.ts).
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { CommandContext, CommandSpec, ConnectionView, ServerView } from "./redis/command.js";
import { lookupCommand, NOSCRIPT_EXTRA } from "./redis/command-table.js";
import { Keyspace } from "./redis/keyspace.js";
import { PubSub, type MessageSink } from "./redis/pubsub.js";
import { CommandError, ErrorReply, OK, QUEUED, type Reply } from "./redis/reply.js";
import { loadLua } from "./redis/lua-runtime.js";
import { ScriptEngine } from "./redis/scripting.js";
import { infoText } from "./redis/server-info.js";

/** A source of time in ms. Only differences matter, unless `epochMs` is left to its default. */
export interface Clock {
  now(): number;
}

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

const DEFAULT_CONFIG: Record<string, string> = {
  appendonly: "no",
  appendfsync: "everysec",
  save: "",
  maxmemory: "0",
  "maxmemory-policy": "noeviction",
  "min-replicas-to-write": "0",
  "min-replicas-max-lag": "10",
  "lua-time-limit": "5000",
  "busy-reply-threshold": "5000",
  "notify-keyspace-events": "",
  port: "6379",
  databases: "16",
};

/** A client connection's state on the server. */
export class ServerConnection implements ConnectionView {
  readonly id: number;
  name: string | undefined;
  /** Commands queued after MULTI; undefined outside a transaction. */
  queued: string[][] | undefined;
  /** A command failed to queue: EXEC must refuse. */
  queueFailed = false;

  constructor(id: number) {
    this.id = id;
  }
}

export class MemoryRedisServer {
  readonly version: string;
  readonly #clock: Clock;
  readonly #epochMs: number;
  readonly #keyspace: Keyspace;
  readonly #scripts: ScriptEngine;
  readonly #view: ServerView;
  readonly #pubsub = new PubSub();
  readonly #config: Map<string, string>;
  readonly #startedUs: number;
  readonly #runId = randomBytes(20).toString("hex");
  #nextClientId = 1;
  /** The instant a running script started (no key expires for it after that). */
  #scriptNow: number | undefined;
  #commandsProcessed = 0;

  /**
   * Resolves once scripts can run (wasmoon, the Lua in WebAssembly, is loaded: once per process).
   * MemoryRedis waits for it by itself; call it before running scripts through `execute`.
   * Rejects, saying how to install it, when wasmoon is not installed.
   */
  static ready(): Promise<void> {
    return loadLua();
  }

  constructor(options: MemoryRedisServerOptions = {}) {
    // Scripts will want the runtime soon: start loading it (a failure is reported when one runs).
    loadLua().catch(() => {});
    this.#clock = options.clock ?? { now: () => performance.now() };
    this.#epochMs = options.epochMs ?? (options.clock ? Date.UTC(2026, 0, 1) : performance.timeOrigin);
    this.version = options.version ?? "7.2.0";
    const [major = 0, minor = 0] = this.version.split(".").map(Number);
    const shortestDoubles = major > 7 || (major === 7 && minor >= 2);
    this.#config = new Map(Object.entries({ ...DEFAULT_CONFIG, ...options.config }));
    this.#keyspace = new Keyspace(() => this.#expiryNow());
    this.#scripts = new ScriptEngine({
      version: this.version,
      shortestDoubles,
      dispatch: (ctx, argv) => this.#dispatch(ctx.conn as ServerConnection, argv, true),
    });
    const replicas = options.replicas ?? 0;
    this.#startedUs = this.timeUs();
    this.#view = {
      version: this.version,
      shortestDoubles,
      config: this.#config,
      replicas,
      timeUs: () => this.timeUs(),
      info: (sections) => this.#info(sections, replicas),
      publish: (channel, message, sharded) => this.#pubsub.publish(channel, message, sharded),
      loadScript: (source) => this.#scripts.load(source),
      scriptExists: (sha) => this.#scripts.exists(sha),
      flushScripts: () => this.#scripts.flush(),
      evalScript: (ctx, source, sha, keys, args) => this.#eval(ctx, source, sha, keys, args),
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

  /** The instant keys expire against: as Redis 7 does, a running script sees none expire after it started. */
  #expiryNow(): number {
    return this.#scriptNow ?? this.nowMs();
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

  /** Runs one command from a client (MULTI queueing included) and returns its reply. */
  execute(conn: ServerConnection, argv: readonly string[]): Reply {
    this.#commandsProcessed++;
    const name = (argv[0] ?? "").toLowerCase();
    if (name === "multi" || name === "exec" || name === "discard") return this.#transaction(conn, name, argv);
    if (conn.queued) {
      const problem = this.#check(argv, false);
      if (problem) {
        conn.queueFailed = true;
        return problem;
      }
      conn.queued.push([...argv]);
      return QUEUED;
    }
    return this.#dispatch(conn, argv, false);
  }

  /** Adds `sink` to the receivers of `channel` (sharded: SPUBLISH's). */
  subscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    this.#pubsub.subscribe(sink, channel, sharded);
  }

  unsubscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    this.#pubsub.unsubscribe(sink, channel, sharded);
  }

  #transaction(conn: ServerConnection, name: string, argv: readonly string[]): Reply {
    if (argv.length !== 1) return new ErrorReply(`ERR wrong number of arguments for '${name}' command`);
    if (name === "multi") {
      if (conn.queued) return new ErrorReply("ERR MULTI calls can not be nested");
      conn.queued = [];
      conn.queueFailed = false;
      return OK;
    }
    const queued = conn.queued;
    if (!queued) return new ErrorReply(`ERR ${name.toUpperCase()} without MULTI`);
    conn.queued = undefined;
    if (name === "discard") return OK;
    if (conn.queueFailed) return new ErrorReply("EXECABORT Transaction discarded because of previous errors.");
    return queued.map((command) => this.#dispatch(conn, command, false));
  }

  #check(argv: readonly string[], inScript: boolean): ErrorReply | undefined {
    const spec = lookupCommand(argv, inScript);
    return spec instanceof ErrorReply ? spec : undefined;
  }

  #dispatch(conn: ServerConnection, argv: readonly string[], inScript: boolean): Reply {
    const name = (argv[0] ?? "").toLowerCase();
    if (inScript && NOSCRIPT_EXTRA.has(name)) return new ErrorReply("ERR This Redis command is not allowed from script");
    if (!inScript && NOSCRIPT_EXTRA.has(name)) {
      // Only subscriber connections subscribe; a command connection is told so.
      if (name === "multi" || name === "exec" || name === "discard") return this.#transaction(conn, name, argv);
      return new ErrorReply(`ERR MemoryRedis: ${name.toUpperCase()} is only available on a subscriber connection (createSubscriber)`);
    }
    const spec = lookupCommand(argv, inScript);
    if (spec instanceof ErrorReply) return spec;
    if (inScript && spec.flags?.includes("noscript")) return new ErrorReply("ERR This Redis command is not allowed from script");
    const ctx: CommandContext = { ks: this.#keyspace, server: this.#view, conn, now: () => this.nowMs(), inScript };
    try {
      return (spec.run as NonNullable<CommandSpec["run"]>)(ctx, argv);
    } catch (error) {
      if (error instanceof CommandError) return error.reply;
      throw error;
    }
  }

  #eval(ctx: CommandContext, source: string | undefined, sha: string, keys: readonly string[], args: readonly string[]): Reply {
    this.#scriptNow = this.nowMs();
    try {
      return this.#scripts.eval(ctx, source, sha, keys, args);
    } finally {
      this.#scriptNow = undefined;
    }
  }

  #info(sections: readonly string[], replicas: number): string {
    return infoText(sections, {
      version: this.version, runId: this.#runId, timeUs: this.timeUs(), uptimeS: Math.floor((this.timeUs() - this.#startedUs) / 1e6),
      clients: this.#nextClientId - 1, keys: this.#keyspace.size, commandsProcessed: this.#commandsProcessed, replicas, config: this.#config,
    });
  }
}
