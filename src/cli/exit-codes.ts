import { AuthError } from "../errors.js";

/**
 * Exit codes of the `surelock` command, part of its contract (docs/cli.md). `exec` otherwise
 * exits with its command's own code, so a command may happen to use one of these too: scripts
 * that must tell them apart should also read stderr.
 */
export const ExitCode = {
  /** Success; for `exec`, the command exited 0. */
  ok: 0,
  /** `doctor` found a failing check (or a warning, with `--strict`). */
  failed: 1,
  /** Bad arguments: unknown command or flag, bad value, missing key; `exec --permits` other than the semaphore's stored number. */
  usage: 2,
  /** Redis unreachable or failing, or no quorum of nodes agreed (sysexits EX_UNAVAILABLE). */
  unavailable: 69,
  /** A bug in surelock itself (sysexits EX_SOFTWARE). */
  internal: 70,
  /** Redis refused the credentials, or the ACL user lacks a command, key or channel surelock needs (sysexits EX_NOPERM). */
  noPermission: 77,
  /** `exec --timeout`: the lock stayed busy; try again later (sysexits EX_TEMPFAIL, like `lockf -t`). */
  timeout: 75,
  /** `exec`: the lease was lost while the command ran, and the command was stopped. */
  lost: 76,
  /** `exec`: the command was found but could not be started (as in env, timeout, nohup). */
  cannotExecute: 126,
  /** `exec`: the command was not found. */
  notFound: 127,
  /** `exec`: the command (or the wait) ended by signal n exits with 128 + n, as in a shell. */
  signalBase: 128,
} as const;

/** An error that ends the command with a message (one line on stderr) and an exit code. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A refusal by Redis of the client's credentials or ACL (`AuthError`, or an error reply of that kind). */
export function isAuthFailure(error: unknown): boolean {
  if (error instanceof AuthError) return true;
  const message = error instanceof Error ? error.message : String(error);
  return /^(?:[A-Za-z]+Error: )?(?:NOAUTH|WRONGPASS|NOPERM)\b/.test(message) || /\binvalid (?:username-)?password\b/i.test(message);
}

/** What to do about an auth failure, after its message. */
export const AUTH_HINT = " (check the user and password in --redis, e.g. redis://user:password@host:6379;" +
  " an ACL user needs EVALSHA, EVAL, INFO, PUBLISH, SUBSCRIBE and PING on surelock's keys and channels: see docs/adapters.md)";

/** Bad arguments: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.usage);
    this.name = "UsageError";
  }
}
