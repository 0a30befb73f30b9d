/**
 * MemoryRedis: surelock's RedisAdapter over an in-memory server. Each instance is one client
 * connection (commands run in the order sent, replies come back in that order, one event-loop
 * turn later); `duplicate()` opens another connection to the same server, and `new MemoryRedis()`
 * starts a new server (quorum mode: one per node). Fault hooks let a test hold, drop, replay or
 * fail commands, drop subscriber connections and lose messages.
 */
import type { RedisAdapter, RedisArg, RedisSubscriber } from "../adapters/types.js";
import { deliverLater } from "./activity.js";
import { flatten, ioredisShaped, type IoredisArg } from "./ioredis-shape.js";
import { Gate, MemoryConnectionError, MemoryReplyError, type CommandCall, type Interceptor } from "./faults.js";
import { MemoryRedisServer, type MemoryRedisServerOptions, type MessageSink, type ServerConnection } from "./memory-redis.js";
import { loadLua, luaLoaded } from "./redis/lua-runtime.js";
import { ErrorReply, StatusReply, type Reply } from "./redis/reply.js";
import { sha1hex } from "./redis/scripting.js";

export interface MemoryRedisOptions extends MemoryRedisServerOptions {
  /** The adapter's name in surelock's messages. Default "memory-<n>". */
  readonly name?: string;
}

// Byte strings inside, UTF-8 outside (what a socket would carry).
const NON_ASCII = /[\u0080-\uffff]/;
const toBytes = (s: string): string => (NON_ASCII.test(s) ? Buffer.from(s, "utf8").toString("latin1") : s);
const fromBytes = (s: string): string => (NON_ASCII.test(s) ? Buffer.from(s, "latin1").toString("utf8") : s);

/** A reply as ioredis hands it over: strings, numbers, null, arrays, and Error objects inside arrays. */
function toJs(reply: Reply): unknown {
  if (typeof reply === "string") return fromBytes(reply);
  if (reply instanceof StatusReply) return reply.status;
  if (reply instanceof ErrorReply) return new MemoryReplyError(fromBytes(reply.message));
  if (Array.isArray(reply)) return reply.map(toJs);
  return reply;
}

/** EVAL's arguments after the script, from either calling convention. */
const scriptArgs = (keys: number | string | readonly string[], rest: readonly IoredisArg[]): RedisArg[] =>
  Array.isArray(keys) ? [keys.length, ...keys, ...flatten(rest)] : [keys as number | string, ...flatten(rest)];

let servers = 0;
/** Commands that may run a script: they wait for the Lua runtime to load. */
const SCRIPTING = new Set(["EVAL", "EVALSHA", "SCRIPT"]);

/**
 * One connection to an in-memory Redis: a `RedisAdapter` for `new Surelock({ redis })`, and the
 * ioredis-shaped methods (`get`, `set`, `hgetall`, `eval(script, numKeys, ...)`, …) an app's own
 * code calls on its client.
 */
export class MemoryRedis extends ioredisShaped() implements RedisAdapter {
  /** The adapter's name in surelock's messages. */
  readonly name: string;
  /** Always false: one in-memory node. */
  readonly cluster = false;
  /** The in-memory server this connection talks to. */
  readonly server: MemoryRedisServer;
  readonly #connection: ServerConnection;
  #interceptor: Interceptor | undefined;
  /** The tail of this connection's command line: each command starts after the previous one ran. */
  #executed: Promise<void> = Promise.resolve();
  /** The tail of the reply line: each reply is handed over after the previous one. */
  #replied: Promise<void> = Promise.resolve();
  readonly #subscribers = new Set<MemorySubscriber>();
  #messageLoss: ((channel: string, message: string) => boolean)[] = [];

  constructor(options: MemoryRedisOptions = {}, server?: MemoryRedisServer) {
    super();
    this.server = server ?? new MemoryRedisServer(options);
    this.name = options.name ?? `memory-${server ? servers : ++servers}`;
    this.#connection = this.server.connect();
  }

  /** Another connection to the same server (another client, or another process). */
  duplicate(name?: string): MemoryRedis {
    return new MemoryRedis({ name: name ?? this.name }, this.server);
  }

  /** The server's client id of this connection. */
  get clientId(): number {
    return this.#connection.id;
  }

  /** EVALSHA, as a RedisAdapter calls it (keys and arguments as arrays) or as ioredis does (`numKeys, ...keysAndArgs`). */
  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown>;
  evalsha(sha: string, numKeys: number | string, ...keysAndArgs: IoredisArg[]): Promise<unknown>;
  evalsha(sha: string, keys: number | string | readonly string[], ...rest: IoredisArg[]): Promise<unknown> {
    return this.command(["EVALSHA", sha, ...scriptArgs(keys, rest)]);
  }

  /** EVAL, as a RedisAdapter calls it (keys and arguments as arrays) or as ioredis does (`numKeys, ...keysAndArgs`). */
  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown>;
  eval(script: string, numKeys: number | string, ...keysAndArgs: IoredisArg[]): Promise<unknown>;
  eval(script: string, keys: number | string | readonly string[], ...rest: IoredisArg[]): Promise<unknown> {
    return this.command(["EVAL", script, ...scriptArgs(keys, rest)]);
  }

  /** Sets (or, with undefined, removes) the fault interceptor of this connection. */
  intercept(interceptor: Interceptor | undefined): void {
    this.#interceptor = interceptor;
  }

  /** Any command, such as `["HGETALL", key]`. Numbers are sent as their decimal text, as ioredis does. */
  override command(args: readonly RedisArg[]): Promise<unknown> {
    const argv = args.map((a) => toBytes(String(a)));
    const name = (argv[0] ?? "").toUpperCase();
    const call: CommandCall = {
      name,
      args: args.slice(1).map(String),
      connection: this.#connection.id,
      ...(name === "EVALSHA" ? { sha: String(args[1]).toLowerCase() } : name === "EVAL" ? { sha: sha1hex(argv[1] ?? "") } : {}),
    };
    const fault = this.#interceptor?.(call);
    return new Promise((resolve, reject) => {
      const before = this.#executed;
      let reply: Reply | undefined;
      let unloadable: unknown;
      this.#executed = before.then(async () => {
        if (fault?.kind === "gate" && fault.stage === "execution") await fault.gate.pass(call);
        if (fault?.kind === "fail") return;
        if (!luaLoaded() && SCRIPTING.has(name)) await loadLua().catch((error: unknown) => { unloadable = error; });
        if (unloadable) return;
        reply = this.server.execute(this.#connection, argv);
        if (fault?.kind === "replay") reply = this.server.execute(this.#connection, argv);
      });
      this.#replied = Promise.all([this.#executed, this.#replied]).then(async () => {
        if (fault?.kind === "gate" && fault.stage === "reply") await fault.gate.pass(call);
        if (fault?.kind === "drop-reply" && fault.then === "hang") return;
        const settled = await this.#waitFor(name, argv, reply);
        deliverLater(() => {
          if (unloadable) reject(unloadable);
          else if (fault?.kind === "fail") reject(new MemoryConnectionError(fault.message ?? `${name} failed: connection lost before it was sent (MemoryRedis fault)`));
          else if (fault?.kind === "drop-reply") reject(new MemoryConnectionError(`read ECONNRESET: the reply to ${name} was lost (MemoryRedis fault)`));
          else if (settled instanceof ErrorReply) reject(new MemoryReplyError(fromBytes(settled.message)));
          else resolve(toJs(settled as Reply));
        });
      });
    });
  }

  /** WAIT blocks until enough replicas acknowledged, or its timeout (0: forever), like the real one. */
  async #waitFor(name: string, argv: readonly string[], reply: Reply | undefined): Promise<Reply | undefined> {
    if (name !== "WAIT" || typeof reply !== "number") return reply;
    const [wanted, timeoutMs] = [Number(argv[1]), Number(argv[2])];
    if (reply >= wanted) return reply;
    if (timeoutMs === 0) return new Promise<never>(() => {});
    await new Promise<void>((resolve) => this.server.setTimer(resolve, timeoutMs));
    return reply;
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    const subscriber = new MemorySubscriber(this.server, () => this.#subscribers.delete(subscriber), (channel, message) => this.#loses(channel, message));
    this.#subscribers.add(subscriber);
    return subscriber;
  }

  /**
   * Drops every subscriber connection this adapter opened: subscriptions stop, messages
   * published meanwhile are lost. They come back (subscribed again, `onReconnect` called) when
   * `until` opens, or on a later turn without it.
   */
  dropSubscribers(until?: Gate): void {
    for (const subscriber of this.#subscribers) subscriber.drop(until);
  }

  /** Loses the next message delivered to this adapter's subscribers (that `filter` accepts). */
  loseNextMessage(filter: (channel: string, message: string) => boolean = () => true): void {
    this.#messageLoss.push(filter);
  }

  #loses(channel: string, message: string): boolean {
    const i = this.#messageLoss.findIndex((f) => f(channel, message));
    if (i < 0) return false;
    this.#messageLoss.splice(i, 1);
    return true;
  }
}

/** A subscriber connection: messages arrive one turn after PUBLISH, in publish order. */
class MemorySubscriber implements RedisSubscriber, MessageSink {
  readonly #server: MemoryRedisServer;
  readonly #closing: () => void;
  readonly #loses: (channel: string, message: string) => boolean;
  readonly #channels = new Set<string>();
  #onMessage: (channel: string, message: string) => void = () => {};
  #onReconnect: () => void = () => {};
  #connected = true;
  #closed = false;

  constructor(server: MemoryRedisServer, closing: () => void, loses: (channel: string, message: string) => boolean) {
    this.#server = server;
    this.#closing = closing;
    this.#loses = loses;
  }

  subscribe(channel: string): Promise<void> {
    return this.#later(() => {
      this.#channels.add(channel);
      if (this.#connected) this.#server.subscribe(this, toBytes(channel), false);
    });
  }

  unsubscribe(channel: string): Promise<void> {
    return this.#later(() => {
      this.#channels.delete(channel);
      this.#server.unsubscribe(this, toBytes(channel), false);
    });
  }

  onMessage(handler: (channel: string, message: string) => void): void { this.#onMessage = handler; }

  onReconnect(handler: () => void): void { this.#onReconnect = handler; }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const channel of this.#channels) this.#server.unsubscribe(this, toBytes(channel), false);
    this.#channels.clear();
    this.#closing();
  }

  deliver(channel: string, message: string): void {
    const text = { channel: fromBytes(channel), message: fromBytes(message) };
    if (this.#loses(text.channel, text.message)) return;
    deliverLater(() => {
      if (this.#connected && !this.#closed) this.#onMessage(text.channel, text.message);
    });
  }

  drop(until?: Gate): void {
    if (!this.#connected || this.#closed) return;
    this.#connected = false;
    for (const channel of this.#channels) this.#server.unsubscribe(this, toBytes(channel), false);
    const back = (): void => {
      if (this.#closed) return;
      this.#connected = true;
      for (const channel of this.#channels) this.#server.subscribe(this, toBytes(channel), false);
      deliverLater(() => { if (!this.#closed) this.#onReconnect(); });
    };
    if (until) void until.pass({ name: "RECONNECT", args: [], connection: 0 }).then(back);
    else deliverLater(back);
  }

  #later(fn: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      deliverLater(() => {
        if (this.#closed) reject(new MemoryConnectionError("Connection is closed.", "ECONNCLOSED"));
        else { fn(); resolve(); }
      });
    });
  }
}

