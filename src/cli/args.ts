/**
 * The command line, read: argv split into the command, its flags (each checked against that
 * command: parseArgs alone cannot, as every command has flags of its own) and its operands, and
 * the checked values the commands take. Anything it does not understand is a UsageError (exit
 * code 2) with a one-line message naming the flag and the value, before any connection is made.
 */
import { parseArgs } from "node:util";
import { MAX_KEY_BYTES, MAX_OWNER_BYTES, MAX_PREFIX_BYTES } from "../validate.js";
import { DEFAULT_REDIS_URL, parseRedisUrl, type RedisAddress } from "./connection.js";
import { parseDuration } from "./duration.js";
import { UsageError } from "./exit-codes.js";
import { COMMAND_HELP } from "./help.js";
import { quote } from "./output.js";

export type CommandName = keyof typeof COMMAND_HELP;
export const COMMANDS = Object.keys(COMMAND_HELP) as CommandName[];

/** Every flag of every command (parseArgs needs them up front to know which take a value). */
const OPTIONS = {
  redis: { type: "string", multiple: true },
  prefix: { type: "string" },
  "key-prefix": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  key: { type: "string" },
  owner: { type: "string" },
  ttl: { type: "string" },
  timeout: { type: "string" },
  "kill-after": { type: "string" },
  fair: { type: "boolean" },
  shared: { type: "boolean" },
  exclusive: { type: "boolean" },
  semaphore: { type: "boolean" },
  permits: { type: "string" },
  foreground: { type: "boolean" },
  verbose: { type: "boolean" },
  json: { type: "boolean" },
  force: { type: "boolean" },
  kind: { type: "string" },
  strict: { type: "boolean" },
  wait: { type: "boolean" },
  follow: { type: "boolean" },
  "counter-retention": { type: "string" },
} as const;
export type OptionName = keyof typeof OPTIONS;

const GLOBAL: readonly OptionName[] = ["redis", "prefix", "key-prefix", "help"];
const ALLOWED: Readonly<Record<CommandName, readonly OptionName[]>> = {
  exec: [...GLOBAL, "key", "shared", "exclusive", "semaphore", "permits", "owner", "ttl", "timeout", "kill-after", "fair", "foreground", "verbose"],
  inspect: [...GLOBAL, "json"],
  list: [...GLOBAL, "json"],
  release: [...GLOBAL, "force", "kind"],
  doctor: [...GLOBAL, "json", "strict", "counter-retention"],
  leader: [...GLOBAL, "json", "wait", "follow", "timeout"],
};


/** argv split into its parts; flags checked against the command. */
export interface CommandLine {
  readonly command: CommandName | undefined;
  readonly values: ReadonlyMap<OptionName, string | true | readonly string[]>;
  /** Positionals after the command and before `--`. */
  readonly positionals: readonly string[];
  /** What follows `--`, if it was given. */
  readonly rest: readonly string[] | undefined;
}

/** One flag as parseArgs reports it. */
interface FlagToken {
  readonly name: string;
  readonly rawName: string;
  readonly value?: string | undefined;
  readonly inlineValue?: boolean | undefined;
}

/** argv as parseArgs tokenizes it, with the command picked out. */
export interface Tokens {
  readonly command: CommandName | undefined;
  readonly flags: readonly FlagToken[];
  readonly positionals: readonly string[];
  readonly rest: readonly string[] | undefined;
}

export function tokenize(argv: readonly string[]): Tokens {
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
export function parseCommandLine(t: Tokens): CommandLine {
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

export function string(line: CommandLine, name: OptionName): string | undefined {
  const value = line.values.get(name);
  return typeof value === "string" ? value : undefined;
}

/** A duration flag in ms, at least `minMs`; undefined when absent. */
export function duration(line: CommandLine, name: OptionName, minMs: number): number | undefined {
  const text = string(line, name);
  if (text === undefined) return undefined;
  const parsed = parseDuration(text);
  if ("error" in parsed) throw new UsageError(`invalid --${name} ${quote(text)}: ${parsed.error}`);
  if (parsed.ms < minMs) throw new UsageError(`invalid --${name} ${quote(text)}: expected at least ${minMs}ms`);
  return parsed.ms;
}

/** `--owner`: the acquire's `owner` (holders with the same owner share the lock); checked before connecting. */
export function ownerOf(line: CommandLine): string | undefined {
  const owner = string(line, "owner");
  if (owner !== undefined && (owner.length === 0 || !owner.isWellFormed() || Buffer.byteLength(owner) > MAX_OWNER_BYTES)) {
    throw new UsageError(`invalid --owner ${quote(owner.length > 80 ? `${owner.slice(0, 80)}…` : owner)}: expected 1 to ${MAX_OWNER_BYTES} bytes of well-formed UTF-8`);
  }
  return owner;
}

/** The single operand of inspect, list and release. */
export function operand(operands: readonly string[], name: string, required: true): string;
export function operand(operands: readonly string[], name: string, required: false): string | undefined;
export function operand(operands: readonly string[], name: string, required: boolean): string | undefined {
  if (operands.length > 1) throw new UsageError(`unexpected argument ${quote(operands[1] as string)}: only one ${name} is taken`);
  if (required && operands.length === 0) throw new UsageError(`missing ${name}`);
  return operands[0];
}

export function checkKey(what: string, key: string): string {
  if (key.length === 0 || !key.isWellFormed() || Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new UsageError(`invalid ${what} ${quote(key.length > 80 ? `${key.slice(0, 80)}…` : key)}: expected 1 to ${MAX_KEY_BYTES} bytes of well-formed UTF-8`);
  }
  return key;
}

/**
 * The namespace the locks' keys and channels live under: `--key-prefix` (the application client's
 * own key prefix, such as ioredis `keyPrefix`, which the client puts in front of every key and
 * surelock in front of its channels) followed by `--prefix`.
 */
export function prefixOf(line: CommandLine): string {
  const prefix = string(line, "prefix") ?? "surelock";
  const keyPrefix = string(line, "key-prefix") ?? "";
  // Braces would break the hash tag that keeps one lock's keys in one Cluster slot.
  for (const [flag, value, min] of [["--prefix", prefix, 1], ["--key-prefix", keyPrefix, 0]] as const) {
    if (value.length < min || !value.isWellFormed() || Buffer.byteLength(value) > MAX_PREFIX_BYTES || /[{}]/.test(value)) {
      throw new UsageError(`invalid ${flag} ${quote(value)}: expected ${min} to ${MAX_PREFIX_BYTES} bytes of well-formed UTF-8 without { or }`);
    }
  }
  return `${keyPrefix}${prefix}`;
}

/** The URLs from --redis (repeatable), else REDIS_URL, else the default; no server twice. */
export function redisAddresses(line: CommandLine, env: NodeJS.ProcessEnv): RedisAddress[] {
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
