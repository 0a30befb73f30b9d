/**
 * The lock protocol's encoding, in one place: which script each operation calls with which KEYS
 * and ARGV, how its reply is read (a reply not understood is a ScriptError, never a guess), and
 * the messages told on a lock's channel. One module per lock family — exclusive.ts (a mutex),
 * shared.ts (a semaphore, a read-write lock), multi.ts (a multiLock), coordination.ts (elections
 * and latches) — over what they share (holds.ts), plus the keep-alive batch (keepalive.ts), the
 * channel messages (channel.ts) and the guard's and operators' scripts (operator.ts).
 */
export { scripts } from "./scripts.js";
export type { CallOptions, AcquireReply, ReleaseReply } from "./holds.js";
export { holdState, ticketState } from "./holds.js";
export type { MultiAcquireReply } from "./multi.js";
export type { SetPermitsReply } from "./shared.js";
export type { GuardReply } from "./operator.js";
export type { ScriptCall } from "../scripts/index.js";
