/**
 * Where the etcd store keeps things, and how a holder key's value is written. One prefix per lock
 * name, one key per hold under it: `<root>L/<name>/<hold>` for locks, `E/` for elections (a
 * candidate is a hold), `C/` for latches (one key per id counted down). Names are escaped so that
 * the prefix of one name never covers another's keys ("a" must not range over "a/b").
 */
import type { LockMode } from "./types.js";

export type Space = "L" | "E" | "C";

/** "%" and "/" escaped: the prefix `<name>/` then ends exactly where the name does. */
export function escapeName(name: string): string {
  return name.replace(/%/g, "%25").replace(/\//g, "%2F");
}

export function prefixOf(root: string, space: Space, name: string): string {
  return `${root}${space}/${escapeName(name)}/`;
}

/** The end of the range that covers every key starting with `prefix` (etcd's range_end). */
export function rangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  // The prefix ends with "/" (0x2f): bumping the last byte is always possible.
  end[end.length - 1]! += 1;
  return end;
}

/** A holder key's value. Short names: it is written on every acquire, entry and release. */
export interface HolderValue {
  /** Owner. */
  readonly o: string;
  /** Mode: x mutex, r read, w write, s semaphore. */
  readonly m: "x" | "r" | "w" | "s";
  /** Permits (semaphore; 1 otherwise). */
  readonly p: number;
  /** The semaphore's limit (0 otherwise). */
  readonly n: number;
  /** Entry ids. */
  readonly e: readonly string[];
  /** An election's proclaimed value. */
  readonly v?: string;
}

export function modeLetter(mode: LockMode): HolderValue["m"] {
  return mode.kind === "mutex" ? "x" : mode.kind === "read" ? "r" : mode.kind === "write" ? "w" : "s";
}

export function modeOf(v: HolderValue): LockMode {
  if (v.m === "s") return { kind: "semaphore", limit: v.n, permits: v.p };
  return { kind: v.m === "x" ? "mutex" : v.m === "r" ? "read" : "write" };
}

export function encodeHolder(v: HolderValue): Buffer {
  return Buffer.from(JSON.stringify(v));
}

/** A value another writer left that is not ours reads as undefined (the caller treats it as a foreign key). */
export function decodeHolder(raw: Buffer): HolderValue | undefined {
  try {
    const v = JSON.parse(raw.toString("utf8")) as Partial<HolderValue>;
    if (typeof v.o !== "string" || !["x", "r", "w", "s"].includes(v.m as string) || typeof v.p !== "number" || typeof v.n !== "number" || !Array.isArray(v.e)) {
      return undefined;
    }
    return v as HolderValue;
  } catch {
    return undefined;
  }
}
