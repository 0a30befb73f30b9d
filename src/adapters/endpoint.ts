/**
 * One Redis deployment with our policies around the raw adapter: every call has a deadline,
 * scripts go by EVALSHA with an EVAL fallback, client failures become typed errors, a deployment
 * too old to work is refused at the first call, and (with the `replicas` option) writes that
 * grant a right count only once replicas have them.
 */
import type { Clock } from "../clock.js";
import { DeadlineQueue } from "../deadline.js";
import { AuthError, ConnectionError, ScriptError, SurelockError, UnsupportedError } from "../errors.js";
import type { ScriptCall } from "../scripts/index.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, ReplicaWait } from "./types.js";

/** Where a call's deadline comes from: the shared queue, or a timer of its own. */
interface Deadlines {
  add(expire: () => void): { cancel(): void };
}

export interface EndpointOptions {
  readonly clock: Clock;
  /** Longest wait for one reply, ms. */
  readonly timeoutMs: number;
  /** Replicas that must acknowledge each acknowledged write; none: no WAIT. */
  readonly replicas?: ReplicaWait | undefined;
}

export class Endpoint {
  readonly adapter: RedisAdapter;
  readonly timeoutMs: number;
  readonly replicas: ReplicaWait | undefined;
  /** The command that announces on a lock's channel: sharded pub/sub in a Cluster. */
  readonly publish: "PUBLISH" | "SPUBLISH";
  readonly #clock: Clock;
  readonly #deadlines: DeadlineQueue;
  readonly #acknowledgedDeadlines: DeadlineQueue | undefined;
  #supported: Promise<void> | undefined;
  #checked = false;

  constructor(adapter: RedisAdapter, o: EndpointOptions) {
    this.adapter = adapter;
    this.timeoutMs = o.timeoutMs;
    this.replicas = o.replicas;
    this.publish = adapter.cluster ? "SPUBLISH" : "PUBLISH";
    this.#clock = o.clock;
    this.#deadlines = new DeadlineQueue(o.clock, o.timeoutMs);
    // WAIT may take its whole timeout on top of the write's own deadline.
    this.#acknowledgedDeadlines = o.replicas && new DeadlineQueue(o.clock, o.timeoutMs + o.replicas.timeoutMs);
  }

  get name(): string {
    return this.adapter.name;
  }

  /**
   * Runs a script: one round trip while the server has it cached (the usual case); after a
   * restart, a failover or SCRIPT FLUSH the first call per connection costs a second one. `undo`
   * receives a reply the caller will not see — it came after the deadline, or too few replicas
   * acknowledged it — so that whatever it granted can be given back.
   */
  run<R>(call: ScriptCall<R>, undo?: (reply: R) => Promise<void> | void): Promise<R> {
    if (this.#checked && !(this.replicas && call.script.acknowledged)) return this.#script(call, undo);
    return this.#run(call, undo);
  }

  /**
   * The usual call, written out for speed (it runs twice per acquire and release cycle): EVALSHA
   * (EVAL once more on NOSCRIPT) bounded by the shared deadline, its reply parsed, one promise in all.
   */
  #script<R>(call: ScriptCall<R>, undo: ((reply: R) => Promise<void> | void) | undefined): Promise<R> {
    const { script, keys, args } = call;
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const deadline = this.#deadlines.add(() => {
        settled = true;
        reject(new ConnectionError(`${script.name} of ${keys[0] ?? "?"} on ${this.name}: no reply within ${this.timeoutMs} ms`));
      });
      const replied = (raw: unknown): void => {
        deadline.cancel();
        if (settled) {
          if (undo) undoLate(call, raw, undo);
          return;
        }
        settled = true;
        let reply: R;
        try {
          reply = script.parse(raw);
        } catch (error) {
          reject(error as Error);
          return;
        }
        resolve(reply);
      };
      const failed = (error: unknown): void => {
        deadline.cancel();
        if (settled) return;
        settled = true;
        reject(toSurelockError(error, `${script.name} of ${keys[0] ?? "?"} on ${this.name}`));
      };
      let sent: Promise<unknown>;
      try {
        sent = this.adapter.evalsha(script.sha, keys, args);
      } catch (error) {
        deadline.cancel();
        settled = true;
        reject(error as Error);
        return;
      }
      sent.then(replied, (error: unknown) => {
        if (!isNoScript(error)) return failed(error);
        // EVAL also loads the script into the server's cache for the next EVALSHA.
        try {
          this.adapter.eval(script.lua, keys, args).then(replied, failed);
        } catch (evalError) {
          failed(evalError);
        }
      });
    });
  }

  async #run<R>(call: ScriptCall<R>, undo?: (reply: R) => Promise<void> | void): Promise<R> {
    let deadlines: Deadlines = this.#deadlines;
    let acknowledgedDeadlines: Deadlines | undefined = this.#acknowledgedDeadlines;
    if (!this.#checked) {
      // The version check and the script share the call's one deadline: a server that does not
      // answer costs one command timeout, not one per command.
      const startedAt = this.#clock.now();
      await this.#supportedVersion();
      const leftMs = this.timeoutMs - (this.#clock.now() - startedAt);
      deadlines = this.#remaining(leftMs);
      acknowledgedDeadlines = this.replicas && this.#remaining(leftMs + this.replicas.timeoutMs);
    }
    const what = (): string => `${call.script.name} of ${call.keys[0] ?? "?"}`;
    const wait = this.replicas && call.script.acknowledged ? this.replicas : undefined;
    const parseLate = undo && ((raw: unknown): void => {
      try {
        void undo(call.script.parse(raw));
      } catch {
        // A reply we cannot read grants nothing we could give back.
      }
    });
    if (!wait) return call.script.parse(await this.#bounded(this.#evalsha(call), what, deadlines, this.timeoutMs, parseLate));
    const acked = await this.#bounded(this.#evalshaThenWait(call, wait), what, acknowledgedDeadlines as Deadlines,
      this.timeoutMs + wait.timeoutMs, parseLate && ((a: AcknowledgedReply) => parseLate(a.reply)));
    const reply = call.script.parse(acked.reply);
    if (acked.acknowledged >= wait.replicas) return reply;
    // Given back before the call settles: an acquire that fails for want of replicas leaves nothing.
    await undo?.(reply);
    const failed = acked.waitError === undefined ? "" : ` (WAIT failed: ${messageOf(acked.waitError)})`;
    throw new ConnectionError(
      `${what()} on ${this.name}: ${acked.acknowledged} of ${wait.replicas} required replicas acknowledged the write ` +
        `within ${wait.timeoutMs} ms${failed}; see the \`replicas\` option`,
      acked.waitError === undefined ? undefined : { cause: acked.waitError },
    );
  }

  /** A plain command (INFO, SCAN, ...), with the same deadline and error mapping. */
  command(args: readonly RedisArg[], key?: string): Promise<unknown> {
    return this.#bounded(this.adapter.command(args, key), () => String(args[0]), this.#deadlines, this.timeoutMs);
  }

  /** A deadline `ms` from now, for the rest of a call whose first part (the version check) took some of its time. */
  #remaining(ms: number): Deadlines {
    const clock = this.#clock;
    return {
      add(expire) {
        const timer = clock.setTimeout(expire, Math.max(0, ms));
        return { cancel: () => clock.clearTimeout(timer) };
      },
    };
  }

  /**
   * Refuses, once and for all, a deployment whose version cannot work: every call then rejects
   * with the same UnsupportedError (INFO is asked once). An unknown version passes. A server that
   * does not answer, or refuses the client's credentials, fails the call; one that refuses INFO
   * alone (an ACL) lets it go on.
   */
  #supportedVersion(): Promise<void> {
    this.#supported ??= this.#bounded(this.adapter.command(["INFO", "server"]), () => "INFO server", this.#deadlines, this.timeoutMs).then(
      (info) => {
        const version = /redis_version:(\d+)\.(\d+)/.exec(String(info));
        if (!version) {
          this.#checked = true;
          return;
        }
        const [major, minor] = [Number(version[1]), Number(version[2])];
        if (this.adapter.cluster && major < 7) {
          throw new UnsupportedError(
            `${this.name} runs Redis ${major}.${minor}: in a Cluster surelock needs Redis 7.0 or later (its wake-ups use ` +
              "sharded pub/sub, SPUBLISH, which Redis 6 does not have)",
          );
        }
        if (major < 6 || (major === 6 && minor < 2)) {
          throw new UnsupportedError(`${this.name} runs Redis ${major}.${minor}: surelock needs Redis 6.2 or later`);
        }
        // Only a supported deployment skips the check from now on; a refused one stays refused.
        this.#checked = true;
      },
      (error: unknown) => {
        // Could not ask: try again with the next call.
        this.#supported = undefined;
        if (error instanceof ConnectionError || error instanceof AuthError) throw error;
      },
    );
    return this.#supported;
  }

  #evalsha(call: ScriptCall<unknown>): Promise<unknown> {
    const { script, keys, args } = call;
    return this.adapter.evalsha(script.sha, keys, args).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      // EVAL also loads the script into the server's cache for the next EVALSHA.
      return this.adapter.eval(script.lua, keys, args);
    });
  }

  async #evalshaThenWait(call: ScriptCall<unknown>, wait: ReplicaWait): Promise<AcknowledgedReply> {
    const { script, keys, args } = call;
    try {
      return await this.#thenWait(["EVALSHA", script.sha, keys.length, ...keys, ...args], call, wait);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.#thenWait(["EVAL", script.lua, keys.length, ...keys, ...args], call, wait);
    }
  }

  async #thenWait(command: readonly RedisArg[], call: ScriptCall<unknown>, wait: ReplicaWait): Promise<AcknowledgedReply> {
    if (this.adapter.commandThenWait) return this.adapter.commandThenWait(command, call.keys[0], wait);
    // A custom adapter without commandThenWait: correct only if it uses one connection per node.
    const reply = command[0] === "EVAL"
      ? await this.adapter.eval(call.script.lua, call.keys, call.args)
      : await this.adapter.evalsha(call.script.sha, call.keys, call.args);
    try {
      const acknowledged = await this.adapter.command(["WAIT", wait.replicas, wait.timeoutMs], call.keys[0]);
      return { reply, acknowledged: Number(acknowledged) || 0 };
    } catch (waitError) {
      return { reply, acknowledged: 0, waitError };
    }
  }

  /** `what` names the call in errors (built only for one). */
  #bounded<T>(work: Promise<T>, what: () => string, deadlines: Deadlines, timeoutMs: number, late?: (value: T) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const deadline = deadlines.add(() => {
        settled = true;
        reject(new ConnectionError(`${what()} on ${this.name}: no reply within ${timeoutMs} ms`));
      });
      work.then(
        (value) => {
          deadline.cancel();
          if (settled) late?.(value);
          else {
            settled = true;
            resolve(value);
          }
        },
        (error: unknown) => {
          deadline.cancel();
          if (settled) return;
          settled = true;
          reject(toSurelockError(error, `${what()} on ${this.name}`));
        },
      );
    });
  }
}

/** A reply that came after its call gave up, handed to `undo` so that what it granted is given back. */
function undoLate<R>(call: ScriptCall<R>, raw: unknown, undo: (reply: R) => Promise<void> | void): void {
  try {
    void undo(call.script.parse(raw));
  } catch {
    // A reply we cannot read grants nothing we could give back.
  }
}

/**
 * Error replies that mean "not now" rather than "never": a replica answering for a demoted primary,
 * a server loading its data, a Cluster electing or moving slots, a busy script.
 */
const TRANSIENT = new Set(["READONLY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "MOVED", "ASK", "NOREPLICAS"]);

/**
 * A client's failure as a typed error: an error reply from Redis (an upper-case code first, as in
 * "ERR …" or "NOPERM …") is a ScriptError unless it is transient; anything else (a closed socket,
 * a refused connection, a client-side timeout) is a ConnectionError.
 */
export function toSurelockError(error: unknown, what: string): SurelockError {
  if (error instanceof SurelockError) return error;
  const message = messageOf(error);
  const code = errorReplyCode(message);
  if ((code !== undefined && AUTH.has(code)) || /\binvalid (username-)?password\b/i.test(message)) {
    return new AuthError(`${what} failed: Redis refused the client's credentials or permissions: "${message}"${authHint(code)}`, { cause: error });
  }
  const reply = code !== undefined || (error instanceof Error && /^(ReplyError|ErrorReply|SimpleError|BlobError)$/.test(error.name));
  if (reply && !(code !== undefined && TRANSIENT.has(code)) && !/max number of clients/i.test(message)) {
    return new ScriptError(`${what} failed: Redis answered "${message}"`, { cause: error });
  }
  return new ConnectionError(`${what} failed: ${message}${hintFor(code, message)}`, { cause: error });
}

/** The code of a Redis error reply (`ERR`, `NOSCRIPT`, …), also behind a client's "XxxError: " prefix. */
function errorReplyCode(message: string): string | undefined {
  return /^(?:[A-Za-z]+Error: )?([A-Z][A-Z_]+)(?:\s|$)/.exec(message)?.[1];
}

/**
 * Whether the server does not have the script cached. Clients word it differently ("NOSCRIPT No
 * matching script…" from Redis itself, "NoScriptError: No matching script" from GLIDE).
 */
export function isNoScript(error: unknown): boolean {
  const message = messageOf(error);
  return /\bNOSCRIPT\b/.test(message) || /no matching script/i.test(message) || (error instanceof Error && /noscript/i.test(error.name));
}

/** Error replies that mean the client's credentials or its ACL user are wrong for surelock. */
const AUTH = new Set(["NOAUTH", "WRONGPASS", "NOPERM"]);

function authHint(code: string | undefined): string {
  if (code === "NOPERM") {
    return " (the ACL user needs EVALSHA, EVAL, INFO, PUBLISH (SPUBLISH on a Cluster), SUBSCRIBE and PING, every key" +
      " and channel under surelock's prefix, e.g. `+evalsha +eval +info +publish +spublish +subscribe +ssubscribe" +
      " +unsubscribe +sunsubscribe +ping ~surelock:* &surelock:*`: see docs/adapters.md)";
  }
  return " (give the client the right `username`/`password`: see docs/adapters.md)";
}

/** What to change, for the errors a deployment (rather than surelock) causes. */
function hintFor(code: string | undefined, message: string): string {
  // node-redis says only this when used before connect() (or after its close).
  if (/^the client is closed$/i.test(message)) {
    return " (a node-redis client must be connected, `await client.connect()`, before surelock uses it, and stay open while it does)";
  }
  if (code !== "READONLY") return "";
  return " (the client is connected to a replica, typically a primary demoted by a failover: let it reconnect" +
    " on this error, e.g. ioredis `reconnectOnError: (e) => e.message.startsWith(\"READONLY\")`, or Sentinel" +
    " `failoverDetector: true`; the lease is not given up while its validity lasts)";
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
