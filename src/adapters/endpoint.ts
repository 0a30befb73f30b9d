/**
 * One Redis deployment with our policies around the raw adapter: every call has a deadline,
 * scripts go by EVALSHA with a NOSCRIPT fallback, client failures become ConnectionError, and
 * (with the `replicas` option) writes that grant a right count only once replicas have them.
 */
import { ConnectionError } from "../errors.js";
import type { AcknowledgedReply, RedisAdapter, RedisArg, ReplicaWait } from "./types.js";

/** A Lua script with its SHA1, as generated from src/scripts/*.lua. */
export interface ScriptSource {
  readonly name: string;
  readonly sha: string;
  readonly lua: string;
}

/**
 * Scripts whose write grants, prolongs or fences a right. With `replicas` set each is followed
 * by WAIT on the same connection and fails unless enough replicas have it. Releases and queue
 * departures are left out: losing one in a failover only keeps a lock until its ttl.
 */
const ACKNOWLEDGED = new Set(["acquire", "acquire-fair", "acquire-shared", "extend", "renew-batch", "raise-fence", "guard-write"]);

export class Endpoint {
  readonly adapter: RedisAdapter;
  readonly timeoutMs: number;
  /** Replicas that must acknowledge each acknowledged write; undefined: no WAIT. */
  readonly replicas: ReplicaWait | undefined;

  constructor(adapter: RedisAdapter, timeoutMs: number, replicas?: ReplicaWait) {
    this.adapter = adapter;
    this.timeoutMs = timeoutMs;
    this.replicas = replicas;
  }

  get name(): string {
    return this.adapter.name;
  }

  /**
   * Runs a script. One round trip while the server has the script cached (the usual case);
   * after a restart, a failover or SCRIPT FLUSH the first call per connection costs a second one.
   * `late` receives a reply that arrives after the deadline, so the caller can undo an
   * acquire it already reported as failed. With `replicas` set, a write that too few replicas
   * acknowledged rejects with ConnectionError, after handing its reply to `unacknowledged`
   * (where an acquire gives the lock back).
   */
  run(
    script: ScriptSource,
    keys: readonly string[],
    args: readonly RedisArg[],
    late?: (reply: unknown) => void,
    unacknowledged?: (reply: unknown) => void,
  ): Promise<unknown> {
    const what = `${script.name} of ${keys[0] ?? "?"}`;
    const wait = this.replicas && ACKNOWLEDGED.has(script.name) ? this.replicas : undefined;
    if (!wait) return this.#withDeadline(this.#evalsha(script, keys, args), what, this.timeoutMs, late);
    return this.#runAcknowledged(script, keys, args, wait, what, late, unacknowledged);
  }

  /** A plain command (INFO, SCAN, ...), with the same deadline and error mapping. */
  command(args: readonly RedisArg[], key?: string): Promise<unknown> {
    return this.#withDeadline(this.adapter.command(args, key), String(args[0]), this.timeoutMs);
  }

  async #runAcknowledged(
    script: ScriptSource,
    keys: readonly string[],
    args: readonly RedisArg[],
    wait: ReplicaWait,
    what: string,
    late: ((reply: unknown) => void) | undefined,
    unacknowledged: ((reply: unknown) => void) | undefined,
  ): Promise<unknown> {
    // WAIT may take its whole timeout on top of the write's own deadline.
    const lateAcked = late && ((acked: unknown): void => late((acked as AcknowledgedReply).reply));
    const acked = (await this.#withDeadline(
      this.#evalshaThenWait(script, keys, args, wait), what, this.timeoutMs + wait.timeoutMs, lateAcked,
    )) as AcknowledgedReply;
    if (acked.acknowledged >= wait.replicas) return acked.reply;
    unacknowledged?.(acked.reply);
    const failed = acked.waitError === undefined ? "" : ` (WAIT failed: ${messageOf(acked.waitError)})`;
    throw new ConnectionError(
      `${what} on ${this.name}: ${acked.acknowledged} of ${wait.replicas} required replicas acknowledged the write ` +
        `within ${wait.timeoutMs} ms${failed}; see the \`replicas\` option`,
      acked.waitError === undefined ? undefined : { cause: acked.waitError },
    );
  }

  async #evalsha(script: ScriptSource, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    try {
      return await this.adapter.evalsha(script.sha, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      // EVAL also loads the script into the server's cache for the next EVALSHA.
      return this.adapter.eval(script.lua, keys, args);
    }
  }

  async #evalshaThenWait(
    script: ScriptSource,
    keys: readonly string[],
    args: readonly RedisArg[],
    wait: ReplicaWait,
  ): Promise<AcknowledgedReply> {
    try {
      return await this.#thenWait(["EVALSHA", script.sha, keys.length, ...keys, ...args], keys, wait);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.#thenWait(["EVAL", script.lua, keys.length, ...keys, ...args], keys, wait);
    }
  }

  async #thenWait(command: readonly RedisArg[], keys: readonly string[], wait: ReplicaWait): Promise<AcknowledgedReply> {
    if (this.adapter.commandThenWait) return this.adapter.commandThenWait(command, keys[0], wait);
    // A custom adapter without commandThenWait: correct only if it uses one connection per node.
    const [name, source, , ...rest] = command;
    const scriptArgs = rest.slice(keys.length);
    const reply = name === "EVAL"
      ? await this.adapter.eval(String(source), keys, scriptArgs)
      : await this.adapter.evalsha(String(source), keys, scriptArgs);
    try {
      const acknowledged = await this.adapter.command(["WAIT", wait.replicas, wait.timeoutMs], keys[0]);
      return { reply, acknowledged: Number(acknowledged) || 0 };
    } catch (waitError) {
      return { reply, acknowledged: 0, waitError };
    }
  }

  #withDeadline(call: Promise<unknown>, what: string, timeoutMs: number, late?: (reply: unknown) => void): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        // Timers run before I/O in the event loop: give a reply already waiting on the socket
        // one turn to be read, so a busy process does not mistake its own delay for Redis's.
        setImmediate(() => {
          if (settled) return;
          settled = true;
          reject(new ConnectionError(`${what} on ${this.name}: no reply within ${timeoutMs} ms`));
        });
      }, timeoutMs);
      timer.unref();
      call.then(
        (reply) => {
          clearTimeout(timer);
          if (!settled) resolve(reply);
          else late?.(reply);
          settled = true;
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          reject(
            error instanceof ConnectionError
              ? error
              : new ConnectionError(`${what} on ${this.name} failed: ${messageOf(error)}${hintFor(error)}`, { cause: error }),
          );
        },
      );
    });
  }
}

function isNoScript(error: unknown): boolean {
  return messageOf(error).startsWith("NOSCRIPT");
}

/** What to change, for the errors a deployment (rather than surelock) causes. */
function hintFor(error: unknown): string {
  const message = messageOf(error);
  if (/\bREADONLY\b/.test(message)) {
    return " (the client is connected to a replica, typically a primary demoted by a failover: let it reconnect" +
      " on this error, e.g. ioredis `reconnectOnError: (e) => e.message.startsWith(\"READONLY\")`, or Sentinel" +
      " `failoverDetector: true`; the lease is not given up while its validity lasts)";
  }
  return "";
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
