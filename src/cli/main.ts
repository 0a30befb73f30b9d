/**
 * The `surelock` command: argument parsing, help, and the mapping of outcomes to exit codes.
 * Each command lives in its own file; this one turns argv into that command's options and
 * refuses anything it does not understand with a one-line message and exit code 2.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { ConnectionError, InvalidArgumentError, QuorumError } from "../errors.js";
import { MAX_KEY_BYTES, MAX_OWNER_BYTES, MAX_PREFIX_BYTES, MIN_TTL_MS } from "../validate.js";
import { DEFAULT_REDIS_URL, parseRedisUrl, type RedisAddress } from "./connection.js";
import { doctor } from "./doctor.js";
import { parseDuration } from "./duration.js";
import { exec } from "./exec.js";
import { CliError, ExitCode, UsageError } from "./exit-codes.js";
import { COMMAND_HELP, MAIN_HELP } from "./help.js";
import { inspect } from "./inspect.js";
import { list } from "./list.js";
import { print, quote } from "./output.js";
import { release, RELEASE_KINDS, type ReleaseKind } from "./release.js";

type CommandName = keyof typeof COMMAND_HELP;
const COMMANDS = Object.keys(COMMAND_HELP) as CommandName[];

/** Every flag of every command (parseArgs needs them up front to know which take a value). */
const OPTIONS = {
  redis: { type: "string", multiple: true },
  prefix: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  key: { type: "string" },
  owner: { type: "string" },
  ttl: { type: "string" },
  timeout: { type: "string" },
  "kill-after": { type: "string" },
  fair: { type: "boolean" },
  foreground: { type: "boolean" },
  verbose: { type: "boolean" },
  json: { type: "boolean" },
  force: { type: "boolean" },
  kind: { type: "string" },
  strict: { type: "boolean" },
} as const;
type OptionName = keyof typeof OPTIONS;

const GLOBAL: readonly OptionName[] = ["redis", "prefix", "help"];
const ALLOWED: Readonly<Record<CommandName, readonly OptionName[]>> = {
  exec: [...GLOBAL, "key", "owner", "ttl", "timeout", "kill-after", "fair", "foreground", "verbose"],
  inspect: [...GLOBAL, "json"],
  list: [...GLOBAL, "json"],
  release: [...GLOBAL, "force", "kind"],
  doctor: [...GLOBAL, "json", "strict"],
};

const DEFAULT_TTL_MS = 30_000;
const DEFAULT_KILL_AFTER_MS = 5_000;
/** argv split into its parts; flags checked against the command. */
interface CommandLine {
  readonly command: CommandName | undefined;
  readonly values: ReadonlyMap<OptionName, string | true | readonly string[]>;
  /** Positionals after the command and before `--`. */
  readonly positionals: readonly string[];
  /** What follows `--`, if it was given. */
  readonly rest: readonly string[] | undefined;
}

/** Runs the command line and returns the exit code. Never throws. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let command: CommandName | undefined;
  try {
    const tokens = tokenize(argv);
    command = tokens.command;
    const line = parseCommandLine(tokens);
    if (line.values.has("version")) {
      print(version());
      return ExitCode.ok;
    }
    if (!command) {
      if (line.values.has("help")) {
        print(MAIN_HELP);
        return ExitCode.ok;
      }
      process.stderr.write(`${MAIN_HELP}\n`);
      return ExitCode.usage;
    }
    if (line.values.has("help")) {
      print(COMMAND_HELP[command]);
      return ExitCode.ok;
    }
    return await run(command, line, env);
  } catch (error) {
    return report(error, command);
  }
}

function run(command: CommandName, line: CommandLine, env: NodeJS.ProcessEnv): Promise<number> {
  const addresses = redisAddresses(line, env);
  const prefix = prefixOf(line);
  const json = line.values.has("json");
  const operands = [...line.positionals, ...(line.rest ?? [])];
  switch (command) {
    case "exec": {
      const stray = line.positionals[0];
      if (stray !== undefined) throw new UsageError(`unexpected argument ${quote(stray)}: put the command after --, as in "surelock exec --key K -- ${stray} ..."`);
      const [program, ...args] = line.rest ?? [];
      if (program === undefined || program === "") throw new UsageError("missing the command to run, after --");
      const key = string(line, "key");
      if (key === undefined) throw new UsageError("missing --key (the lock to hold while the command runs)");
      return exec({
        addresses,
        prefix,
        key: checkKey("--key", key),
        owner: ownerOf(line),
        ttlMs: duration(line, "ttl", MIN_TTL_MS) ?? DEFAULT_TTL_MS,
        timeoutMs: duration(line, "timeout", 0) ?? Infinity,
        killAfterMs: duration(line, "kill-after", 0) ?? DEFAULT_KILL_AFTER_MS,
        fair: line.values.has("fair"),
        foreground: line.values.has("foreground"),
        verbose: line.values.has("verbose"),
        command: program,
        args,
      });
    }
    case "inspect":
      return inspect({ addresses, prefix, key: checkKey("key", operand(operands, "K", true)), json });
    case "list":
      return list({ addresses, prefix, pattern: operand(operands, "PATTERN", false) ?? "*", json });
    case "release": {
      const key = checkKey("key", operand(operands, "K", true));
      const kind = string(line, "kind") ?? "mutex";
      if (!(RELEASE_KINDS as readonly string[]).includes(kind)) {
        throw new UsageError(`invalid --kind ${quote(kind)}: expected ${RELEASE_KINDS.join(", ")}`);
      }
      return release({ addresses, prefix, key, kind: kind as ReleaseKind, force: line.values.has("force") });
    }
    case "doctor":
      if (operands.length > 0) throw new UsageError(`unexpected argument ${quote(operands[0] as string)}`);
      return doctor({ addresses, json, strict: line.values.has("strict") });
  }
}

/** One flag as parseArgs reports it. */
interface FlagToken {
  readonly name: string;
  readonly rawName: string;
  readonly value?: string | undefined;
  readonly inlineValue?: boolean | undefined;
}

/** argv as parseArgs tokenizes it, with the command picked out. */
interface Tokens {
  readonly command: CommandName | undefined;
  readonly flags: readonly FlagToken[];
  readonly positionals: readonly string[];
  readonly rest: readonly string[] | undefined;
}

function tokenize(argv: readonly string[]): Tokens {
  const { tokens } = parseArgs({ args: [...argv], options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
  let command: CommandName | undefined;
  const positionals: string[] = [];
  let rest: string[] | undefined;
  const flags: FlagToken[] = [];
  for (const token of tokens) {
    if (token.kind === "option-terminator") rest = [];
    else if (token.kind === "option") flags.push(token);
    else if (rest) rest.push(token.value);
    else if (command === undefined && positionals.length === 0) {
      if (!(COMMANDS as string[]).includes(token.value)) {
        throw new UsageError(`unknown command ${quote(token.value)}: expected one of ${COMMANDS.join(", ")}`);
      }
      command = token.value as CommandName;
    } else positionals.push(token.value);
  }
  return { command, flags, positionals, rest };
}

/** Checks each flag against the command (parseArgs alone cannot: every command has its own). */
function parseCommandLine(t: Tokens): CommandLine {
  const { command } = t;
  const values = new Map<OptionName, string | true | string[]>();
  for (const flag of t.flags) {
    const name = flag.name as OptionName;
    const spec = OPTIONS[name] as { type: "string" | "boolean"; multiple?: boolean } | undefined;
    const allowed = command ? ALLOWED[command] : ["help", "version"];
    if (!spec || !(allowed as readonly string[]).includes(name)) {
      const owners = spec ? COMMANDS.filter((c) => ALLOWED[c].includes(name)) : [];
      const hint = !command ? " before a command" : owners.length > 0 ? `; it belongs to ${owners.map((c) => `surelock ${c}`).join(", ")}` : "";
      throw new UsageError(`unknown option ${flag.rawName}${hint}`);
    }
    if (spec.type === "boolean") {
      if (flag.value !== undefined) throw new UsageError(`option ${flag.rawName} takes no value, got ${quote(flag.value)}`);
      values.set(name, true);
      continue;
    }
    const value = flag.value;
    if (value === undefined || (!flag.inlineValue && value.length > 1 && value.startsWith("-"))) {
      const got = value === undefined ? "" : ` (got ${quote(value)}; write ${flag.rawName}=${value} if that is the value)`;
      throw new UsageError(`missing value for ${flag.rawName}${got}`);
    }
    const previous = values.get(name);
    if (spec.multiple) values.set(name, [...(Array.isArray(previous) ? previous : []), value]);
    else if (previous !== undefined) throw new UsageError(`option ${flag.rawName} given more than once`);
    else values.set(name, value);
  }
  return { command, values, positionals: t.positionals, rest: t.rest };
}

function string(line: CommandLine, name: OptionName): string | undefined {
  const value = line.values.get(name);
  return typeof value === "string" ? value : undefined;
}

/** A duration flag in ms, at least `minMs`; undefined when absent. */
function duration(line: CommandLine, name: OptionName, minMs: number): number | undefined {
  const text = string(line, name);
  if (text === undefined) return undefined;
  const parsed = parseDuration(text);
  if ("error" in parsed) throw new UsageError(`invalid --${name} ${quote(text)}: ${parsed.error}`);
  if (parsed.ms < minMs) throw new UsageError(`invalid --${name} ${quote(text)}: expected at least ${minMs}ms`);
  return parsed.ms;
}

/** `--owner`: the acquire's `owner` (holders with the same owner share the lock); checked before connecting. */
function ownerOf(line: CommandLine): string | undefined {
  const owner = string(line, "owner");
  if (owner !== undefined && (owner.length === 0 || !owner.isWellFormed() || Buffer.byteLength(owner) > MAX_OWNER_BYTES)) {
    throw new UsageError(`invalid --owner ${quote(owner.length > 80 ? `${owner.slice(0, 80)}…` : owner)}: expected 1 to ${MAX_OWNER_BYTES} bytes of well-formed UTF-8`);
  }
  return owner;
}

/** The single operand of inspect, list and release. */
function operand(operands: readonly string[], name: string, required: true): string;
function operand(operands: readonly string[], name: string, required: false): string | undefined;
function operand(operands: readonly string[], name: string, required: boolean): string | undefined {
  if (operands.length > 1) throw new UsageError(`unexpected argument ${quote(operands[1] as string)}: only one ${name} is taken`);
  if (required && operands.length === 0) throw new UsageError(`missing ${name}`);
  return operands[0];
}

/** The library's rules (validate.ts): well-formed Unicode, limits in bytes of UTF-8, as Redis stores it. */
function checkKey(what: string, key: string): string {
  if (key.length === 0 || !key.isWellFormed() || Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new UsageError(`invalid ${what} ${quote(key.length > 80 ? `${key.slice(0, 80)}…` : key)}: expected 1 to ${MAX_KEY_BYTES} bytes of well-formed UTF-8`);
  }
  return key;
}

function prefixOf(line: CommandLine): string {
  const prefix = string(line, "prefix") ?? "surelock";
  // Braces would break the hash tag that keeps one lock's keys in one Cluster slot.
  if (prefix.length === 0 || !prefix.isWellFormed() || Buffer.byteLength(prefix) > MAX_PREFIX_BYTES || /[{}]/.test(prefix)) {
    throw new UsageError(`invalid --prefix ${quote(prefix)}: expected 1 to ${MAX_PREFIX_BYTES} bytes of well-formed UTF-8 without { or }`);
  }
  return prefix;
}

/** The URLs from --redis (repeatable), else REDIS_URL, else the default; no server twice. */
function redisAddresses(line: CommandLine, env: NodeJS.ProcessEnv): RedisAddress[] {
  const given = line.values.get("redis");
  const fromFlag = Array.isArray(given) && given.length > 0;
  const urls: readonly string[] = fromFlag ? given : [env.REDIS_URL || DEFAULT_REDIS_URL];
  const seen = new Set<string>();
  return urls.map((url) => {
    const address = parseRedisUrl(url);
    if (!address) {
      throw new UsageError(`invalid ${fromFlag ? "--redis" : "REDIS_URL"} ${quote(url)}: expected a URL such as redis://127.0.0.1:6379 or rediss://user:password@host:6380/0`);
    }
    const server = `${address.host}:${address.port}`;
    if (seen.has(server)) throw new UsageError(`invalid --redis ${quote(url)}: ${server} is given twice, and quorum mode needs independent servers`);
    seen.add(server);
    return address;
  });
}

function version(): string {
  const require = createRequire(import.meta.url);
  // The same relative path from src/cli/ and from dist/cli/.
  return (require("../../package.json") as { version: string }).version;
}

/** Prints the one-line message of a failure and returns its exit code. */
function report(error: unknown, command: CommandName | undefined): number {
  const who = `surelock${command ? ` ${command}` : ""}`;
  let code: number;
  let message: string;
  if (error instanceof CliError) {
    code = error.exitCode;
    message = error instanceof UsageError ? `${error.message} (see "${who} --help")` : error.message;
  } else if (error instanceof InvalidArgumentError) {
    code = ExitCode.usage;
    message = error.message;
  } else if (error instanceof ConnectionError || error instanceof QuorumError) {
    code = ExitCode.unavailable;
    message = error.message;
  } else {
    code = ExitCode.internal;
    message = `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
  }
  process.stderr.write(`${who}: ${message}\n`);
  return code;
}

const code = await main(process.argv.slice(2), process.env);
process.exitCode = code;
// Whatever might still be open (a socket closing slowly) must not keep the command alive.
setTimeout(() => process.exit(code), 2_000).unref();
