/**
 * Which primitive exec takes (the mutex, a side of the read-write lock, a permit of the
 * semaphore), and the wait for it: ended by --timeout or a signal, its failures turned into exit
 * codes, and on a timeout the holders named, so the operator sees who keeps the command out.
 */
import type { Lockable } from "../../index.js";
import { ConflictError, ConnectionError, LockTimeoutError, QuorumError } from "../../errors.js";
import { KeySpace } from "../../keys.js";
import type { Lease } from "../../lease/lease.js";
import type { Surelock } from "../../surelock.js";
import type { Deployment } from "../connection.js";
import { formatDuration } from "../duration.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { expiry } from "../inspect.js";
import { readLockState, type LockState, type SharedHolder } from "../lock-state.js";
import { plural } from "../output.js";
import { subject, type ExecOptions } from "./options.js";
import { signalNumber, type Forwarded, type SignalRelay } from "./signals.js";

/** An interrupted wait: the acquire rejects with this. */
class Interrupted extends Error {
  readonly signal: Forwarded;
  constructor(signal: Forwarded) {
    super(`interrupted by ${signal}`);
    this.signal = signal;
  }
}

/** The primitive the options name; every one of them is acquired the same way. */
function primitive(locks: Surelock, o: ExecOptions): Lockable {
  switch (o.lock.kind) {
    case "mutex": return locks.mutex(o.key, { fair: o.lock.fair });
    case "read": return locks.readWriteLock(o.key).read();
    case "write": return locks.readWriteLock(o.key).write();
    case "semaphore": return locks.semaphore(o.key, { permits: o.lock.permits });
  }
}

/** Waits for the lock; a signal meanwhile ends the wait (and gives back a lock granted as it came). */
export async function acquire(locks: Surelock, deployments: readonly Deployment[], o: ExecOptions, signals: SignalRelay): Promise<Lease> {
  const interrupt = new AbortController();
  signals.onSignal = (signal) => interrupt.abort(new Interrupted(signal));
  try {
    const lease = await primitive(locks, o).acquire({
      // Always given: without --timeout, exec waits until interrupted, not for the library's default.
      timeout: o.timeoutMs,
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
      throw new CliError(`${error.message} while waiting for ${subject(o)}`, ExitCode.signalBase + signalNumber(error.signal));
    }
    if (error instanceof LockTimeoutError) {
      const holders = await describeHolders(deployments[0] as Deployment, o);
      throw new CliError(`timed out after ${formatDuration(error.waitedMs)} waiting for ${subject(o)}${holders}`, ExitCode.timeout);
    }
    if (error instanceof ConflictError && o.lock.kind === "semaphore") {
      // The semaphore is stored with another number of permits: the argument disagrees with Redis.
      const limit = await storedPermits(deployments[0] as Deployment, o);
      const stored = limit === undefined ? "is stored with another number of permits" : `is stored with ${plural(limit, "permit")}`;
      throw new CliError(`${subject(o)} ${stored}, and --permits ${o.lock.permits} was given: every holder of one semaphore must give the same --permits`,
        ExitCode.usage);
    }
    if (error instanceof ConnectionError || error instanceof QuorumError) {
      throw new CliError(`cannot acquire ${subject(o)}: ${error.message}`, ExitCode.unavailable);
    }
    throw error;
  } finally {
    signals.onSignal = undefined;
  }
}

/** ` (held by X, fencing token T, expires in ...)` and the like, or nothing if it cannot be read at once. */
async function describeHolders(d: Deployment, o: ExecOptions): Promise<string> {
  const state = await readState(d, o);
  const words = state ? holders(state, o) : "";
  return words ? ` (${words})` : "";
}

/** What Redis holds for the key, if it answers within a second (it only adds to a message). */
function readState(d: Deployment, o: ExecOptions): Promise<LockState | undefined> {
  return soon(readLockState(d.client, new KeySpace(o.prefix), o.key));
}

/**
 * The semaphore's stored limit: field `p` of its state hash (docs/protocol.md), which outlives
 * the last holder (inspect shows no semaphore then).
 */
async function storedPermits(d: Deployment, o: ExecOptions): Promise<number | undefined> {
  const p = await soon(d.client.hget(new KeySpace(o.prefix).shared(o.key, "sem").state, "p"));
  const n = Number(p ?? Number.NaN);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** `work`'s value if it comes within a second; undefined if not, or if it fails. */
async function soon<T>(work: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), 1_000);
  });
  try {
    return await Promise.race([work, late]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** Who holds the lock the options name, in words; "" when nobody does (it was freed meanwhile). */
function holders(state: LockState, o: ExecOptions): string {
  switch (o.lock.kind) {
    case "mutex": {
      const h = state.mutex?.holder;
      return h ? `held by ${h.owner}, fencing token ${h.fencingToken}, ${expiry(h.pttlMs)}` : "";
    }
    case "read":
    case "write": {
      const all = state.rw?.holders ?? [];
      const writer = all.find((h) => h.mode === "w");
      if (writer) return `written by ${writer.owner}, fencing token ${writer.fencingToken}, ${expiry(writer.expiresInMs)}`;
      const readers = all.filter((h) => h.mode === "r");
      if (o.lock.kind === "write") return readers.length > 0 ? `read by ${plural(readers.length, "reader")}: ${owners(readers)}` : "";
      const waiting = state.rw?.queue.find((t) => t.mode === "w");
      // Readers queue behind a waiting writer, so that writers are not starved.
      return waiting ? `a writer waits for it, ${waiting.owner}, and readers queue behind it` : "";
    }
    case "semaphore": {
      const sem = state.semaphore;
      if (!sem) return "";
      const taken = sem.holders.reduce((sum, h) => sum + h.permits, 0);
      const of = sem.limit === null ? "" : ` of ${sem.limit}`;
      return `${taken}${of} permits taken${sem.holders.length > 0 ? `, by ${owners(sem.holders)}` : ""}`;
    }
  }
}

/** The first few holders' owners, then how many more. */
function owners(holders: readonly SharedHolder[]): string {
  const shown = holders.slice(0, 3).map((h) => h.owner).join(", ");
  return holders.length > 3 ? `${shown} and ${holders.length - 3} more` : shown;
}
