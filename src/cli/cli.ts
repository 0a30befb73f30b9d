/**
 * The `surelock` command as a function: reads the command line (args.ts), runs the command (one
 * file each, exec a folder), and maps its outcome to an exit code, with a one-line message on
 * stderr for every failure. bin.ts is the executable that calls it.
 */
import { createRequire } from "node:module";
import { ConnectionError, InvalidArgumentError, QuorumError } from "../errors.js";
import { checkKey, duration, operand, parseCommandLine, prefixOf, redisAddresses, string, tokenize, type CommandLine, type CommandName } from "./args.js";
import { DEFAULT_COUNTER_RETENTION_MS, doctor } from "./doctor.js";
import { execOptions } from "./exec/args.js";
import { exec } from "./exec/command.js";
import { AUTH_HINT, CliError, ExitCode, isAuthFailure, UsageError } from "./exit-codes.js";
import { COMMAND_HELP, MAIN_HELP } from "./help.js";
import { inspect } from "./inspect.js";
import { leader } from "./leader.js";
import { list } from "./list.js";
import { print, printError, quote, withOutput, type CliOutput } from "./output.js";
import { release, RELEASE_KINDS, type ReleaseKind } from "./release.js";

/**
 * Runs the command line and returns the exit code; never rejects. `output` receives what the run
 * writes (default: the process's stdout and stderr); a command run by `exec` inherits the process's own.
 */
export function main(argv: readonly string[], env: NodeJS.ProcessEnv, output?: CliOutput): Promise<number> {
  if (!Array.isArray(argv) || argv.some((a) => typeof a !== "string")) throw new InvalidArgumentError("argv", argv, "an array of strings");
  if (typeof env !== "object" || env === null) throw new InvalidArgumentError("env", env, "an environment object (process.env)");
  if (output !== undefined && (typeof output !== "object" || output === null || typeof output.stdout !== "function" || typeof output.stderr !== "function")) {
    throw new InvalidArgumentError("output", output, "an object with stdout(text) and stderr(text)");
  }
  return output === undefined ? runLine(argv, env) : withOutput(output, () => runLine(argv, env));
}

async function runLine(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
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
      printError(`${MAIN_HELP}\n`);
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
    case "exec":
      return exec(execOptions(line, addresses, prefix));
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
    case "leader": {
      const key = checkKey("key", operand(operands, "K", true));
      const wait = line.values.has("wait");
      const follow = line.values.has("follow");
      if (wait && follow) throw new UsageError("--wait and --follow do not go together: --follow waits for every change already");
      const timeoutMs = duration(line, "timeout", 0);
      if (timeoutMs !== undefined && !wait) throw new UsageError("--timeout needs --wait");
      return leader({ addresses, prefix, key, json, wait, follow, timeoutMs: timeoutMs ?? Infinity });
    }
    case "doctor":
      if (operands.length > 0) throw new UsageError(`unexpected argument ${quote(operands[0] as string)}`);
      return doctor({ addresses, json, strict: line.values.has("strict"), counterRetentionMs: duration(line, "counter-retention", 1) ?? DEFAULT_COUNTER_RETENTION_MS });
  }
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
  } else if (isAuthFailure(error)) {
    code = ExitCode.noPermission;
    message = `${error instanceof Error ? error.message : String(error)}${AUTH_HINT}`;
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
  printError(`${who}: ${message}\n`);
  return code;
}
