/**
 * exec's command line, read into ExecOptions before any connection is made: which lock
 * (`--key K` alone, `--shared`, `--exclusive`, `--semaphore --permits N`), the durations, the
 * command after `--`. A bad combination is a UsageError that says what to write instead.
 */
import { MIN_TTL_MS } from "../../validate.js";
import { checkKey, duration, ownerOf, string, type CommandLine } from "../args.js";
import type { RedisAddress } from "../connection.js";
import { UsageError } from "../exit-codes.js";
import { quote } from "../output.js";
import type { ExecLock, ExecOptions } from "./options.js";

const DEFAULT_TTL_MS = 30_000;
const DEFAULT_KILL_AFTER_MS = 5_000;
/** The most permits `Surelock.semaphore()` takes. */
const MAX_SEMAPHORE_PERMITS = 1_000_000;

/** The flags that pick a lock other than the mutex; at most one may be given. */
const MODES = ["shared", "exclusive", "semaphore"] as const;

/** Reads `surelock exec`'s flags and command. */
export function execOptions(line: CommandLine, addresses: readonly RedisAddress[], prefix: string): ExecOptions {
  const key = string(line, "key");
  const [program, ...args] = line.rest ?? [];
  const stray = line.positionals[0];
  if (stray !== undefined) throw new UsageError(strayMessage(stray, line, key, program));
  const lock = lockOf(line);
  if (program === undefined || program === "") throw new UsageError("missing the command to run, after --");
  if (key === undefined) throw new UsageError("missing --key (the lock to hold while the command runs)");
  return {
    addresses,
    prefix,
    key: checkKey("--key", key),
    lock,
    owner: ownerOf(line),
    ttlMs: duration(line, "ttl", MIN_TTL_MS) ?? DEFAULT_TTL_MS,
    timeoutMs: duration(line, "timeout", 0) ?? Infinity,
    killAfterMs: duration(line, "kill-after", 0) ?? DEFAULT_KILL_AFTER_MS,
    foreground: line.values.has("foreground"),
    verbose: line.values.has("verbose"),
    command: program,
    args,
  };
}

function lockOf(line: CommandLine): ExecLock {
  const modes = MODES.filter((m) => line.values.has(m));
  if (modes.length > 1) {
    const [a, b] = modes as [string, string];
    const why = a === "shared" && b === "exclusive"
      ? "--shared takes the read side of the read-write lock K, --exclusive its write side: a command holds one of them"
      : "a command runs under one lock: pick one of --shared, --exclusive, --semaphore";
    throw new UsageError(`--${a} and --${b} do not go together: ${why}`);
  }
  const permits = string(line, "permits");
  if (permits !== undefined && modes[0] !== "semaphore") {
    throw new UsageError(`--permits needs --semaphore (write --semaphore --permits ${permits} to run as one of ${permits} holders of the semaphore K)`);
  }
  switch (modes[0]) {
    case "shared": return { kind: "read" };
    case "exclusive": return { kind: "write" };
    case "semaphore": {
      if (permits === undefined) {
        throw new UsageError("--semaphore needs --permits N: how many commands may hold K at once (every holder of K gives the same N)");
      }
      return { kind: "semaphore", permits: permitsOf(permits) };
    }
    default: return { kind: "mutex", fair: line.values.has("fair") };
  }
}

/** `--permits`: a whole number from 1 to the library's limit, written in digits. */
function permitsOf(text: string): number {
  const expected = `expected a whole number from 1 to ${MAX_SEMAPHORE_PERMITS}`;
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n >= 1 && n <= MAX_SEMAPHORE_PERMITS) return n;
    throw new UsageError(`invalid --permits ${quote(text)}: ${expected}`);
  }
  // "3.0", "1e3", " 4": a whole number in another spelling is named, not guessed.
  const n = Number(text);
  const hint = text.trim() !== "" && Number.isInteger(n) && n >= 1 && n <= MAX_SEMAPHORE_PERMITS ? `: did you mean ${n}?` : "";
  throw new UsageError(`invalid --permits ${quote(text)}: ${expected}${hint}`);
}

/** An operand before `--`: most likely a key without --key, permits without --permits, or the command. */
function strayMessage(stray: string, line: CommandLine, key: string | undefined, program: string | undefined): string {
  const unexpected = `unexpected argument ${quote(stray)}`;
  if (line.values.has("semaphore") && !line.values.has("permits") && /^\d+$/.test(stray)) return `${unexpected}: did you mean --permits ${stray}?`;
  if (key === undefined && program !== undefined) return `${unexpected}: did you mean --key ${stray}? (the lock is named with --key, the command goes after --)`;
  return `${unexpected}: put the command after --, as in "surelock exec --key K -- ${stray} ..."`;
}
