/**
 * The Lua scripts (embedded from src/scripts/*.lua with their SHA1) and the parsers of their
 * replies: every reply's shape is checked, and one we do not understand is a ConnectionError,
 * never a guess. The stores (src/store.ts, src/quorum/) build the KEYS and ARGV.
 */
import { ConnectionError } from "../errors.js";
import { LUA } from "./lua.generated.js";

export { LUA };

/** Reply of the acquire scripts: a first entry, a re-entry, or busy (with a hint how long). */
export type AcquireReply =
  | { readonly status: "acquired" | "reentered"; readonly token: bigint }
  | { readonly status: "busy"; readonly retryInMs: number; readonly position?: number };

/** Reply of release: freed, still held by our other entries, gone, or held by another owner. */
export type ReleaseReply = "freed" | "decremented" | "gone" | "taken";

/** Reply of extend / renew / is-held for one lease. */
export type LeaseState = "held" | "gone" | "taken";

function bad(script: string, reply: unknown): never {
  throw new ConnectionError(`unexpected reply from ${script}.lua: ${JSON.stringify(reply)}`);
}

function pair(script: string, reply: unknown): [number, number] {
  if (!Array.isArray(reply) || typeof reply[0] !== "number" || typeof reply[1] !== "number") bad(script, reply);
  return [reply[0] as number, reply[1] as number];
}

export function parseAcquire(reply: unknown): AcquireReply {
  const [code, value] = pair("acquire", reply);
  if (code === 1 || code === 2) return { status: code === 1 ? "acquired" : "reentered", token: BigInt(value) };
  if (code === 0) {
    const position = (reply as unknown[])[2];
    // A PTTL of -1/-2 (no expiry / no key) just means "try again soon".
    const busy = { status: "busy" as const, retryInMs: Math.max(0, value) };
    return typeof position === "number" ? { ...busy, position } : busy;
  }
  return bad("acquire", reply);
}

export function parseRelease(reply: unknown): ReleaseReply {
  const [code] = pair("release", reply);
  switch (code) {
    case 1: return "freed";
    case 2: return "decremented";
    case 0: return "gone";
    case -1: return "taken";
    default: return bad("release", reply);
  }
}

export function parseLeaseState(script: string, reply: unknown): LeaseState {
  if (reply === 1) return "held";
  if (reply === 0) return "gone";
  if (reply === -1) return "taken";
  return bad(script, reply);
}

export function parseStates(reply: unknown, count: number): LeaseState[] {
  if (!Array.isArray(reply) || reply.length !== count) bad("renew-batch", reply);
  return (reply as unknown[]).map((r) => parseLeaseState("renew-batch", r));
}
