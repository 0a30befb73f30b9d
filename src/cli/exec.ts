/**
 * `surelock exec --key K -- cmd args...`: runs a command while holding a mutex, like `etcdctl
 * lock` or `flock`. The command runs only after the lock is ours, in its own process group
 * (unless --foreground), and is stopped (SIGTERM, then SIGKILL) the moment the lease can no
 * longer be trusted. The lock is released once the command has exited.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { channels } from "../diagnostics.js";
import { ConnectionError, LockLostError, LockTimeoutError, QuorumError } from "../errors.js";
import { KeySpace } from "../keys.js";
import type { Lease } from "../lease/lease.js";
import { Surelock } from "../surelock.js";
import {
  CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, unreachable, type Deployment, type RedisAddress,
} from "./connection.js";
import { formatDuration } from "./duration.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { expiry } from "./inspect.js";
import { readLockState } from "./lock-state.js";
import { note, quote } from "./output.js";

export interface ExecOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  readonly key: string;
  /** Acquire as this owner (`acquire({ owner })`); undefined for a fresh one. */
  readonly owner: string | undefined;
  readonly ttlMs: number;
  /** Longest wait for the lock; Infinity to wait until interrupted. */
  readonly timeoutMs: number;
  /** After the lease is lost: time between SIGTERM and SIGKILL. */
  readonly killAfterMs: number;
  readonly fair: boolean;
  /** Keep the command in our process group (it may read the terminal; only it is signalled). */
  readonly foreground: boolean;
  /** Log the lock's life (acquire, renewals, loss, release) on stderr. */
  readonly verbose: boolean;
  readonly command: string;
  readonly args: readonly string[];
}

/** Signals that end the wait, or are passed on to the command once it runs. */
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
type Forwarded = (typeof FORWARDED)[number];

/** An interrupted wait: the acquire rejects with this. */
class Interrupted extends Error {
  readonly signal: Forwarded;
  constructor(signal: Forwarded) {
    super(`interrupted by ${signal}`);
    this.signal = signal;
  }
}

export async function exec(o: ExecOptions): Promise<number> {
  const deployments = await connectNodes(o.addresses);
  const first = deployments[0] as Deployment;
  const locks = new Surelock({
    redis: deployments.length === 1 ? first.client : deployments.map((d) => d.client),
    prefix: o.prefix,
    ttl: o.ttlMs,
  });
  const signals = new SignalRelay();
  const stopLogging = o.verbose ? logLockEvents(o.key) : () => {};
  try {
    const lease = await acquire(locks, deployments, o, signals);
    return await runHolding(lease, o, signals);
  } finally {
    signals.dispose();
    await locks.close();
    stopLogging();
    await disconnectAll(deployments);
  }
}

/**
 * Connects for exec: reconnecting clients, since a lock holder must ride out a short network
 * blip. In quorum mode a majority must answer now; a node that does not still counts, with a
 * client that keeps trying, because leaving it out would let a smaller majority decide.
 */
async function connectNodes(addresses: readonly RedisAddress[]): Promise<Deployment[]> {
  const { deployments, failures } = await connectReachable(addresses, { reconnect: true, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  if (failures.length === 0) return deployments;
  const majority = Math.floor(addresses.length / 2) + 1;
  const reasons = failures.map((f) => f.error.message).join("; ");
  if (deployments.length < majority) {
    await disconnectAll(deployments);
    throw new CliError(`only ${deployments.length} of ${addresses.length} nodes answered, ${majority} needed: ${reasons}`, ExitCode.unavailable);
  }
  for (const f of failures) note(`${f.error.message}; going on with the other nodes and trying it again in the background`);
  return addresses.map((a) => deployments.find((d) => d.address === a) ?? unreachable(a, CONNECT_TIMEOUT_MS));
}

async function acquire(locks: Surelock, deployments: readonly Deployment[], o: ExecOptions, signals: SignalRelay): Promise<Lease> {
  const interrupt = new AbortController();
  signals.onSignal = (signal) => interrupt.abort(new Interrupted(signal));
  try {
    const lease = await locks.mutex(o.key, { fair: o.fair }).acquire({
      ...(o.timeoutMs < Infinity && { timeout: o.timeoutMs }),
      ...(o.owner !== undefined && { owner: o.owner }),
      signal: interrupt.signal,
    });
    if (interrupt.signal.aborted) {
      // The signal came while the lock was being granted: give it back rather than start the command.
      await lease.release().catch(() => {});
      throw interrupt.signal.reason;
    }
    return lease;
  } catch (error) {
    if (error instanceof Interrupted) {
      throw new CliError(`${error.message} while waiting for lock ${quote(o.key)}`, ExitCode.signalBase + signalNumber(error.signal));
    }
    if (error instanceof LockTimeoutError) {
      const holder = await describeHolder(deployments[0] as Deployment, o);
      throw new CliError(`timed out after ${formatDuration(error.waitedMs)} waiting for lock ${quote(o.key)}${holder}`, ExitCode.timeout);
    }
    if (error instanceof ConnectionError || error instanceof QuorumError) {
      throw new CliError(`cannot acquire lock ${quote(o.key)}: ${error.message}`, ExitCode.unavailable);
    }
    throw error;
  } finally {
    signals.onSignal = undefined;
  }
}

/** ` (held by X, fencing token T, expires in ...)`, or nothing if it cannot be read at once. */
async function describeHolder(d: Deployment, o: ExecOptions): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), 1_000);
  });
  try {
    const state = await Promise.race([readLockState(d.client, new KeySpace(o.prefix), o.key), late]);
    const h = state?.mutex?.holder;
    return h ? ` (held by ${h.owner}, fencing token ${h.fencingToken}, ${expiry(h.pttlMs)})` : "";
  } catch {
    return "";
  } finally {
    clearTimeout(timer);
  }
}

async function runHolding(lease: Lease, o: ExecOptions, signals: SignalRelay): Promise<number> {
  if (lease.signal.aborted) return lostBeforeStart(lease, o);
  const child = spawn(o.command, [...o.args], {
    stdio: "inherit",
    detached: !o.foreground,
    env: { ...process.env, SURELOCK_KEY: o.key, SURELOCK_FENCING_TOKEN: lease.fencingToken.toString() },
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  const started = await new Promise<Error | undefined>((resolve) => {
    child.once("spawn", () => resolve(undefined));
    child.once("error", (error) => resolve(error));
  });
  if (started) return couldNotStart(lease, o, started);

  const stopper = new Stopper(child, !o.foreground, o.killAfterMs);
  signals.onSignal = (signal) => stopper.send(signal);
  const stopTogether = o.foreground ? undefined : new StopTogether(lease, stopper);
  let lost: LockLostError | undefined;
  const onLost = (): void => {
    lost = lease.signal.reason as LockLostError;
    const kill = o.killAfterMs > 0 ? `, SIGKILL in ${formatDuration(o.killAfterMs)} if it is still running` : "";
    note(`lock ${quote(o.key)} was lost (${lost.reason}): stopping the command with SIGTERM${kill}`);
    stopper.stop();
  };
  lease.signal.addEventListener("abort", onLost, { once: true });

  const { code, signal } = await exited;
  stopTogether?.dispose();
  lease.signal.removeEventListener("abort", onLost);
  signals.onSignal = undefined;
  stopper.finish(lost !== undefined);

  const commandCode = code ?? ExitCode.signalBase + signalNumber(signal ?? "SIGKILL");
  try {
    await lease.release();
  } catch (error) {
    if (error instanceof LockLostError) {
      if (!lost) note(`lock ${quote(o.key)} was lost (${error.reason}) before the command ended: its work may not have been exclusive`);
      lost ??= error;
    } else {
      // The command is done and was exclusive while it ran; the lock expires after its ttl.
      note(`could not release lock ${quote(o.key)} (${error instanceof Error ? error.message : String(error)}): it expires within ${formatDuration(o.ttlMs)}`);
    }
  }
  if (lost) {
    note(`the command ${signal ? `was ended by ${signal}` : `exited with code ${String(code)}`} after the lock was lost; exiting with ${ExitCode.lost}`);
    return ExitCode.lost;
  }
  return commandCode;
}

async function lostBeforeStart(lease: Lease, o: ExecOptions): Promise<number> {
  const reason = lease.signal.reason as LockLostError;
  await lease.release().catch(() => {});
  note(`lock ${quote(o.key)} was lost (${reason.reason}) before the command could start; it was not run`);
  return ExitCode.lost;
}

async function couldNotStart(lease: Lease, o: ExecOptions, error: NodeJS.ErrnoException): Promise<number> {
  await lease.release().catch(() => {});
  const notFound = error.code === "ENOENT";
  note(`${notFound ? "command not found" : "cannot run command"}: ${quote(o.command)}${notFound ? "" : ` (${error.code ?? error.message})`}`);
  return notFound ? ExitCode.notFound : ExitCode.cannotExecute;
}

/** Delivers signals to the command: to its whole process group unless it runs in the foreground. */
class Stopper {
  readonly #child: ChildProcess;
  readonly #group: boolean;
  readonly #killAfterMs: number;
  #killTimer: NodeJS.Timeout | undefined;
  #stopping = false;

  constructor(child: ChildProcess, group: boolean, killAfterMs: number) {
    this.#child = child;
    this.#group = group;
    this.#killAfterMs = killAfterMs;
  }

  send(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      if (this.#group) process.kill(-pid, signal);
      else this.#child.kill(signal);
    } catch {
      // Already gone.
    }
  }

  /** SIGTERM now, SIGKILL after the grace period (at once when it is 0). */
  stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#killAfterMs === 0) {
      this.send("SIGKILL");
      return;
    }
    this.send("SIGTERM");
    this.#killTimer = setTimeout(() => this.send("SIGKILL"), this.#killAfterMs);
  }

  /**
   * After the command exited. When it was stopped for a lost lease, whatever it started in its
   * group and left running is killed now: none of it may keep working without the lock.
   */
  finish(stopping: boolean): void {
    clearTimeout(this.#killTimer);
    if (stopping && this.#group) this.send("SIGKILL");
  }
}

/**
 * Ctrl-Z for a command in its own process group. The terminal stops only the foreground group,
 * which is surelock's: were surelock to stop alone, the command would keep working while nobody
 * renews its lease (observed: the lock expired in Redis while the command ran on). So surelock
 * stops the command's group first (SIGSTOP, which cannot be ignored), then itself. On SIGCONT
 * (`fg`, `bg`) it looks at the lease before it continues the command: a lease that ran out while
 * stopped is lost, and the command is sent SIGTERM before SIGCONT, so the stop is delivered as
 * it wakes up.
 */
class StopTogether {
  readonly #lease: Lease;
  readonly #stopper: Stopper;
  readonly #onStop = (): void => {
    this.#stopper.send("SIGSTOP");
    process.kill(process.pid, "SIGSTOP");
  };
  readonly #onContinue = (): void => {
    // Reading `held` checks the lease's validity; a lost lease aborts its signal at once, and
    // the abort listener sends the command SIGTERM.
    void this.#lease.held;
    this.#stopper.send("SIGCONT");
  };

  constructor(lease: Lease, stopper: Stopper) {
    this.#lease = lease;
    this.#stopper = stopper;
    process.on("SIGTSTP", this.#onStop);
    process.on("SIGCONT", this.#onContinue);
  }

  dispose(): void {
    process.off("SIGTSTP", this.#onStop);
    process.off("SIGCONT", this.#onContinue);
  }
}

/**
 * Catches SIGINT, SIGTERM and SIGHUP for as long as exec runs and hands them to the current
 * handler. A signal that arrives between two handlers (the command is being started) is kept
 * for the next one, so it is never lost.
 */
class SignalRelay {
  #handler: ((signal: Forwarded) => void) | undefined;
  #pending: Forwarded | undefined;
  readonly #listeners = new Map<Forwarded, () => void>();

  constructor() {
    for (const signal of FORWARDED) {
      const listener = (): void => {
        if (this.#handler) this.#handler(signal);
        else this.#pending = signal;
      };
      this.#listeners.set(signal, listener);
      process.on(signal, listener);
    }
  }

  set onSignal(handler: ((signal: Forwarded) => void) | undefined) {
    this.#handler = handler;
    const pending = this.#pending;
    this.#pending = undefined;
    if (handler && pending) handler(pending);
  }

  dispose(): void {
    for (const [signal, listener] of this.#listeners) process.off(signal, listener);
    this.#listeners.clear();
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return constants.signals[signal] ?? 0;
}

/**
 * `--verbose`: one stderr line per event of this key on surelock's diagnostics channels. A loss
 * is not among them: exec reports it itself, always, with what it does about it.
 */
function logLockEvents(key: string): () => void {
  const mine = (message: unknown): message is Record<string, unknown> =>
    typeof message === "object" && message !== null && (message as { key?: unknown }).key === key;
  const handlers: [keyof typeof channels, (message: unknown) => void][] = [
    ["wait", (m) => {
      if (!mine(m)) return;
      if (m.phase === "start") note(`waiting for lock ${quote(key)}`);
    }],
    ["acquire", (m) => {
      if (mine(m)) note(`acquired lock ${quote(key)} after ${formatDuration(Number(m.waitedMs))}, fencing token ${String(m.fencingToken)}`);
    }],
    ["extend", (m) => {
      if (mine(m)) note(`renewed lock ${quote(key)} for ${formatDuration(Number(m.ttl))}`);
    }],
    ["release", (m) => {
      if (mine(m)) note(`released lock ${quote(key)} after holding it ${formatDuration(Number(m.heldMs))}`);
    }],
    ["error", (m) => {
      if (typeof m === "object" && m !== null) {
        const { operation, error } = m as { operation?: unknown; error?: unknown };
        note(`${String(operation)} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }],
  ];
  for (const [name, handler] of handlers) channels[name].subscribe(handler);
  return () => {
    for (const [name, handler] of handlers) channels[name].unsubscribe(handler);
  };
}
