/** Argument checks. Each throws InvalidArgumentError before any I/O; none clamps silently. */
import { InvalidArgumentError } from "./errors.js";

/** Largest duration we accept: setTimeout's limit (about 24.8 days). */
export const MAX_DURATION_MS = 2_147_483_647;
/** Shortest lease: below this, clock drift and one round trip eat the whole lease. */
export const MIN_TTL_MS = 10;
/** Longest key, resource or owner, in bytes of UTF-8 (what Redis stores). */
export const MAX_KEY_BYTES = 1024;
export const MAX_OWNER_BYTES = 256;
export const MAX_PREFIX_BYTES = 128;
/** The largest limit of a semaphore. */
export const MAX_PERMITS = 1_000_000;

/**
 * A string Redis keeps as given: well-formed Unicode (a lone surrogate would become U+FFFD on the
 * wire, so two different strings would name one lock), from 1 to `maxBytes` bytes of UTF-8.
 */
function checkText(name: string, value: unknown, maxBytes: number, what: string): string {
  if (typeof value !== "string" || value.length === 0 || !value.isWellFormed() || Buffer.byteLength(value) > maxBytes) {
    throw new InvalidArgumentError(name, value, `${what}: a non-empty, well-formed Unicode string of at most ${maxBytes} bytes in UTF-8`);
  }
  return value;
}

export function checkKey(name: string, value: unknown): string {
  return checkText(name, value, MAX_KEY_BYTES, "a key");
}

export function checkOwner(name: string, value: unknown): string {
  return checkText(name, value, MAX_OWNER_BYTES, "an owner");
}

export function checkPrefix(name: string, value: unknown): string {
  checkText(name, value, MAX_PREFIX_BYTES, "a prefix");
  // Braces would break the hash tag that keeps one lock's keys in one Cluster slot.
  if ((value as string).includes("{") || (value as string).includes("}")) {
    throw new InvalidArgumentError(name, value, "a prefix without { or }");
  }
  return value as string;
}

export function checkTtl(name: string, value: unknown): number {
  if (!isInteger(value) || value < MIN_TTL_MS || value > MAX_DURATION_MS) {
    throw new InvalidArgumentError(name, value, `an integer number of ms from ${MIN_TTL_MS} to ${MAX_DURATION_MS}`);
  }
  return value;
}

/** A wait bound: 0 means one attempt, Infinity means no bound. */
export function checkTimeout(name: string, value: unknown): number {
  if (value === Infinity) return value;
  if (!isInteger(value) || value < 0 || value > MAX_DURATION_MS) {
    throw new InvalidArgumentError(name, value, `an integer number of ms from 0 to ${MAX_DURATION_MS}, or Infinity`);
  }
  return value;
}

export function checkPositiveInt(name: string, value: unknown, max: number): number {
  if (!isInteger(value) || value < 1 || value > max) {
    throw new InvalidArgumentError(name, value, `an integer from 1 to ${max}`);
  }
  return value;
}

export function checkSignal(name: string, value: unknown): AbortSignal {
  if (!(value instanceof AbortSignal)) throw new InvalidArgumentError(name, value, "an AbortSignal");
  return value;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== "boolean") throw new InvalidArgumentError(name, value, "a boolean");
  return value;
}

export function checkFunction(name: string, value: unknown): void {
  if (typeof value !== "function") throw new InvalidArgumentError(name, value, "a function");
}

/**
 * Checks that `value` is undefined or a plain object whose keys are all in `allowed`, so a
 * misspelt option (`tll`) is an error rather than a silently ignored default.
 */
export function checkOptions<T extends object>(name: string, value: unknown, allowed: readonly (keyof T & string)[]): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(name, value, `an options object with keys ${allowed.join(", ")}`);
  }
  for (const key of Object.keys(value)) {
    if (!(allowed as readonly string[]).includes(key)) {
      throw new InvalidArgumentError(`${name}.${key}`, (value as Record<string, unknown>)[key], `one of the known options (${allowed.join(", ")})`);
    }
  }
  return value as Partial<T>;
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}
