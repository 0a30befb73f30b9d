/**
 * Reading a script's reply, piece by piece: each helper takes the script's name and the whole
 * reply so that anything we do not understand becomes a ScriptError quoting both, never a guess.
 */
import { ScriptError } from "../errors.js";

/** Throws the ScriptError for a reply `script` should not have given. */
export function unexpected(script: string, reply: unknown): never {
  throw new ScriptError(`unexpected reply from ${script}.lua: ${JSON.stringify(reply)}`);
}

/** The reply as an array whose first element is an integer code. */
export function coded(script: string, reply: unknown): [number, ...unknown[]] {
  if (!Array.isArray(reply) || typeof reply[0] !== "number") unexpected(script, reply);
  return reply as [number, ...unknown[]];
}

/** `value`, one element of `reply`, as an integer. */
export function int(script: string, reply: unknown, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value)) unexpected(script, reply);
  return value;
}

/** `value`, one element of `reply`, as a string. */
export function text(script: string, reply: unknown, value: unknown): string {
  if (typeof value !== "string") unexpected(script, reply);
  return value;
}

/** A JSON document (the CLI's scripts answer with one). */
export function parseJson(script: string): (reply: unknown) => unknown {
  return (reply) => {
    if (typeof reply !== "string") unexpected(script, reply);
    try {
      return JSON.parse(reply) as unknown;
    } catch {
      return unexpected(script, reply);
    }
  };
}

/** Any array, read further by its caller (keepalive's items). */
export function parseArray(script: string): (reply: unknown) => unknown[] {
  return (reply) => (Array.isArray(reply) ? reply : unexpected(script, reply));
}

/** A bare integer. */
export function parseInt(script: string): (reply: unknown) => number {
  return (reply) => int(script, reply, reply);
}
