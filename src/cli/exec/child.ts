/**
 * The command under the lock: started once the lease is ours, stopped the moment the lease can no
 * longer be trusted, and its end turned into exec's exit code after the lock is given back.
 */
import { spawn } from "node:child_process";
import { LockLostError } from "../../errors.js";
import type { Lease } from "../../lease/lease.js";
import { formatDuration } from "../duration.js";
import { ExitCode } from "../exit-codes.js";
import { note, plural, quote } from "../output.js";
import { subject, type ExecOptions } from "./options.js";
import { signalNumber, type SignalRelay } from "./signals.js";
import { Stopper, StopTogether } from "./stop.js";

/** Runs the command while `lease` holds, releases it, and returns exec's exit code. */
export async function runHolding(lease: Lease, o: ExecOptions, signals: SignalRelay): Promise<number> {
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
    note(`${subject(o)} was lost (${lost.reason}): stopping the command with SIGTERM${kill}`);
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
      if (!lost) note(`${subject(o)} was lost (${error.reason}) before the command ended: its work may not have been ${guarded(o)}`);
      lost ??= error;
    } else {
      // The command is done and was protected while it ran; the lock expires after its ttl.
      note(`could not release ${subject(o)} (${error instanceof Error ? error.message : String(error)}): it expires within ${formatDuration(o.ttlMs)}`);
    }
  }
  if (lost) {
    note(`the command ${signal ? `was ended by ${signal}` : `exited with code ${String(code)}`} after the lock was lost; exiting with ${ExitCode.lost}`);
    return ExitCode.lost;
  }
  return commandCode;
}

/** What the lock promised the command, for the message about a loss found at the release. */
function guarded(o: ExecOptions): string {
  switch (o.lock.kind) {
    case "read": return "free of writers";
    case "semaphore": return `within the ${plural(o.lock.permits, "command")} permitted at once`;
    default: return "exclusive";
  }
}

async function lostBeforeStart(lease: Lease, o: ExecOptions): Promise<number> {
  const reason = lease.signal.reason as LockLostError;
  await lease.release().catch(() => {});
  note(`${subject(o)} was lost (${reason.reason}) before the command could start; it was not run`);
  return ExitCode.lost;
}

async function couldNotStart(lease: Lease, o: ExecOptions, error: NodeJS.ErrnoException): Promise<number> {
  await lease.release().catch(() => {});
  const notFound = error.code === "ENOENT";
  note(`${notFound ? "command not found" : "cannot run command"}: ${quote(o.command)}${notFound ? "" : ` (${error.code ?? error.message})`}`);
  return notFound ? ExitCode.notFound : ExitCode.cannotExecute;
}
