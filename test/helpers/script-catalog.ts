/**
 * Which surelock script a command runs, by NAME: EVALSHA is looked up by its SHA1 and EVAL by
 * comparing the script body, both from the generated `LUA` table of the code under test. Faults
 * are configured by classes of names, so one nemesis works on the old protocol's scripts and on
 * the new one's (where `renew-batch`/`extend` become `keepalive`, `is-held` becomes `check`, ...).
 */
import { LUA } from "../../src/scripts/lua.generated.js";
import { commandArgs } from "./resp-frames.js";

/** What a command frame is, as far as faults care. */
export interface CommandInfo {
  /** Upper-case command name (EVALSHA, SET, ...). */
  readonly command: string;
  /** The script's name for EVALSHA / EVAL of a known script, else undefined. */
  readonly script: string | undefined;
  /** The first key the command touches, when there is one. */
  readonly key: string | undefined;
}

/** Fault classes: every name a protocol uses for an operation of that kind, old and new. */
export const FAULT_CLASSES = {
  "acquire-like": ["acquire", "acquire-shared", "acquire-fair", "acquire-multi", "proclaim", "count-down"],
  "release-like": ["release", "release-shared", "release-multi", "leave-queue", "leave-queue-shared", "leave-multi", "force-release", "set-permits", "step-aside"],
  "renew-like": ["renew-batch", "extend", "keepalive"],
  "check-like": ["is-held", "check", "inspect", "inspect-coordination", "read-leader", "read-latch"],
  "fence-like": ["raise-fence", "guard-write"],
} as const satisfies Record<string, readonly string[]>;

export type FaultClass = keyof typeof FAULT_CLASSES;

export const faultClassNames = Object.keys(FAULT_CLASSES) as FaultClass[];

/** The script names of one or more classes. */
export function namesOf(...classes: readonly FaultClass[]): ReadonlySet<string> {
  return new Set(classes.flatMap((c) => FAULT_CLASSES[c]));
}

interface ScriptEntry {
  readonly name: string;
  readonly sha: string;
  readonly lua: string;
}

export class ScriptCatalog {
  readonly #bySha = new Map<string, string>();
  readonly #byBody = new Map<string, string>();

  constructor(scripts: Iterable<ScriptEntry> = Object.values(LUA)) {
    for (const s of scripts) {
      this.#bySha.set(s.sha.toLowerCase(), s.name);
      this.#byBody.set(s.lua, s.name);
    }
  }

  /** Every script name the code under test has. */
  get names(): string[] {
    return [...this.#bySha.values()];
  }

  /** Describes a command frame. Never throws: a frame it cannot read is "unknown". */
  describe(frame: Buffer): CommandInfo {
    let args: string[];
    try {
      // Script, numkeys and the first key are all we need (EVAL bodies can be long: that is fine).
      args = commandArgs(frame, 4);
    } catch {
      return { command: "?", script: undefined, key: undefined };
    }
    const command = (args[0] ?? "").toUpperCase();
    if (command === "EVALSHA" || command === "EVAL") {
      const source = args[1] ?? "";
      const script = command === "EVALSHA" ? this.#bySha.get(source.toLowerCase()) : this.#byBody.get(source);
      const key = Number(args[2]) > 0 ? args[3] : undefined;
      return { command, script, key };
    }
    return { command, script: undefined, key: args[1] };
  }
}
