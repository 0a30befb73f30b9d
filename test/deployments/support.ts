/**
 * Pieces shared by the deployment tests: a referee that sees every critical section enter and
 * leave (and so counts overlaps and fencing tokens that went backwards), contending workers with
 * a fenced counter, and waits on Sentinel and diagnostics events with deadlines.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { connect } from "node:net";
import { Redis } from "ioredis";
import type { FencingGuard, Surelock } from "../../src/index.js";
import type { HostPort, RedisServer } from "../helpers/redis-topology.js";

/** Counts what must never happen: two holders inside one key's section, and tokens going backwards. */
export class Referee {
  overlaps = 0;
  tokenRegressions = 0;
  entered = 0;
  readonly #inside = new Map<string, number>();
  readonly #lastToken = new Map<string, bigint>();
  readonly #onEnter: (() => void)[] = [];

  /** A holder enters `key`'s section with `token`; call the result when it leaves (idempotent). */
  enter(key: string, token: bigint): () => void {
    const inside = this.#inside.get(key) ?? 0;
    if (inside > 0) this.overlaps++;
    this.#inside.set(key, inside + 1);
    const last = this.#lastToken.get(key);
    if (last !== undefined && token <= last) this.tokenRegressions++;
    if (last === undefined || token > last) this.#lastToken.set(key, token);
    this.entered++;
    for (const listener of this.#onEnter.splice(0)) listener();
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#inside.set(key, (this.#inside.get(key) ?? 1) - 1);
    };
  }

  /** Resolves once `count` more sections have entered; rejects after `ms`. */
  async entries(count: number, ms: number, what: string): Promise<void> {
    const target = this.entered + count;
    const until = performance.now() + ms;
    while (this.entered < target) {
      const left = until - performance.now();
      if (left <= 0) throw new Error(`${what}: only ${count - (target - this.entered)} of ${count} sections within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#onEnter.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
}

/** What the workers did, for the figures and for the fenced-counter check. */
export class Tally {
  /** Guarded increments that Redis confirmed. */
  written = 0;
  /** Guarded increments refused because a newer token had written (fencing at work). */
  refused = 0;
  /** Guarded increments whose outcome is unknown (the call failed). */
  unknown = 0;
  /** Acquire attempts that ended, with or without the lock. */
  attempts = 0;
  readonly errors = new Map<string, number>();
  readonly #onAttempt: (() => void)[] = [];

  error(error: unknown): void {
    const code = (error as { code?: string }).code ?? (error as Error).message;
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  attempted(): void {
    this.attempts++;
    for (const listener of this.#onAttempt.splice(0)) listener();
  }

  async attemptsDone(count: number, ms: number): Promise<void> {
    const target = this.attempts + count;
    const until = performance.now() + ms;
    while (this.attempts < target) {
      const left = until - performance.now();
      if (left <= 0) throw new Error(`only ${count - (target - this.attempts)} of ${count} acquire attempts within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#onAttempt.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
}

/** The simulated job inside a section: rejects with the lease's loss when it is lost first. */
function job(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export interface WorkerPlan {
  readonly locks: Surelock;
  readonly guard: FencingGuard;
  readonly key: string;
  /** The data key the guard increments. */
  readonly counter: string;
  readonly referee: Referee;
  readonly tally: Tally;
  readonly stop: AbortSignal;
  /** How long each job takes, in ms. */
  readonly jobMs: () => number;
  readonly acquireTimeoutMs: number;
}

/**
 * One contending worker: takes the lock, works, increments the fenced counter, releases; again
 * until `stop`. Failures (unreachable Redis, lost leases) are counted and the loop goes on.
 */
export async function contend(plan: WorkerPlan): Promise<void> {
  const { referee, tally } = plan;
  while (!plan.stop.aborted) {
    let entered = false;
    try {
      await plan.locks.mutex(plan.key).withLock(async (lease) => {
        entered = true;
        tally.attempted();
        const leave = referee.enter(plan.key, lease.fencingToken);
        lease.signal.addEventListener("abort", leave, { once: true });
        try {
          await job(plan.jobMs(), lease.signal);
          lease.signal.throwIfAborted();
          let outcome;
          try {
            outcome = await plan.guard.write(lease.fencingToken, "INCRBY", plan.counter, 1);
          } catch (error) {
            tally.unknown++;
            throw error;
          }
          if (outcome.written) tally.written++;
          else tally.refused++;
        } finally {
          leave();
        }
      }, { timeout: plan.acquireTimeoutMs });
    } catch (error) {
      if (!entered) tally.attempted();
      tally.error(error);
      // Back off a little so an unreachable Redis is not hammered (pacing, not a test wait).
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Subscribes to a sentinel's `+switch-master`; `next()` resolves with the new primary's address. */
export async function watchFailovers(sentinel: HostPort): Promise<{ next(ms: number): Promise<HostPort>; close(): void }> {
  const connection = new Redis({ host: sentinel.host, port: sentinel.port, retryStrategy: () => 100 });
  connection.on("error", () => {});
  const waiting: ((primary: HostPort) => void)[] = [];
  connection.on("message", (_channel: string, message: string) => {
    // "<name> <old-ip> <old-port> <new-ip> <new-port>"
    const [, , , host = "", port = ""] = message.split(" ");
    for (const resolve of waiting.splice(0)) resolve({ host, port: Number(port) });
  });
  await connection.subscribe("+switch-master");
  return {
    next: (ms) => new Promise<HostPort>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no +switch-master within ${ms} ms`)), ms);
      waiting.push((primary) => { clearTimeout(timer); resolve(primary); });
    }),
    close: () => connection.disconnect(),
  };
}

/** Resolves with the first message on a diagnostics channel that `match` accepts; rejects after `ms`. */
export function nextEvent<T>(channel: string, match: (message: T) => boolean, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const listener = (message: unknown): void => {
      if (!match(message as T)) return;
      finish();
      resolve(message as T);
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no matching ${channel} event within ${ms} ms`));
    }, ms);
    const finish = (): void => {
      clearTimeout(timer);
      unsubscribe(channel, listener);
    };
    subscribe(channel, listener);
  });
}

/** Fails if any surelock key on the server lacks an expiry. */
export async function keysWithoutTtl(server: HostPort & Pick<RedisServer, "command">, prefix = "surelock"): Promise<string[]> {
  const keys = (await server.command("KEYS", `${prefix}:*`)) as string[];
  const missing: string[] = [];
  for (const key of keys) if ((await server.command("PTTL", key)) === -1) missing.push(key);
  return missing;
}

/** One command as MONITOR saw it: the client's address and the arguments. */
export interface Seen {
  readonly source: string;
  readonly args: readonly string[];
}

/**
 * Records every command a server receives (MONITOR), to check what travels on which connection.
 * A raw socket, not ioredis: its MONITOR mode can mistake an early monitor line for a reply.
 */
export async function monitor(server: HostPort): Promise<{ seen: Seen[]; stop(): void }> {
  const socket = connect(server.port, server.host);
  socket.on("error", () => {});
  const seen: Seen[] = [];
  let buffered = "";
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const lines = buffered.split("\r\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "+OK") { resolve(); continue; }
        // +1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "abc" ...
        const match = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (!match) continue;
        const args = [...match[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, "$1"));
        seen.push({ source: match[1]!, args });
      }
    });
    socket.write("MONITOR\r\n");
  });
  return { seen, stop: () => socket.destroy() };
}

/** The command that `source` sent right after `index` (what the same connection did next). */
export function nextFrom(seen: readonly Seen[], index: number): Seen | undefined {
  const source = seen[index]?.source;
  return seen.slice(index + 1).find((s) => s.source === source);
}
