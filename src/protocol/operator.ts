/**
 * The scripts beside the lock protocol proper: the fencing guard's write (src/guard.ts) and the
 * operators' reads and forced releases (src/admin.ts, the CLI). Their callers build the calls.
 */
import { bind, LUA } from "../scripts/index.js";
import { coded, parseJson, text, unexpected } from "./reply.js";

/** Outcome of a guarded write. */
export type GuardReply =
  | { readonly status: "written"; readonly reply: unknown }
  | { readonly status: "refused"; readonly highestToken: bigint }
  | { readonly status: "replayed" };

/** Reads a guard-write reply. */
export function parseGuard(reply: unknown): GuardReply {
  const [code, value] = coded("guard-write", reply);
  if (code === 1) return { status: "written", reply: value };
  if (code === 0) return { status: "refused", highestToken: BigInt(text("guard-write", reply, value)) };
  if (code === 2) return { status: "replayed" };
  return unexpected("guard-write", reply);
}

/** The guard's and the operators' scripts. */
export const operatorScripts = {
  guardWrite: bind(LUA.guardWrite, true, parseGuard),
  inspect: bind(LUA.inspect, false, parseJson("inspect")),
  inspectCoordination: bind(LUA.inspectCoordination, false, parseJson("inspect-coordination")),
  forceRelease: bind(LUA.forceRelease, false, parseJson("force-release")),
} as const;
