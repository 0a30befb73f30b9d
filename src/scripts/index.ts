/**
 * The scripts, each defined once: its source and SHA (generated from src/scripts/*.lua), its
 * calling convention (KEYS and ARGV by the names its header declares), how its reply is read, and
 * whether its write must reach replicas. Every store, the guard, the CLI and the script tests call
 * scripts through these bindings; a reply we do not understand is a ScriptError, never a guess.
 *
 * This is the module the rest of src/ imports: the machinery is in binding.ts and reply.ts, the
 * reply types and parsers in hold-replies.ts and coordination-replies.ts.
 */
import { bind } from "./binding.js";
import { parseGuard, parseLatch, parseLeader } from "./coordination-replies.js";
import { holdState, parseAcquire, parseAcquireMulti, parseRelease, parseSetPermits } from "./hold-replies.js";
import { LUA } from "./lua.generated.js";
import { parseArray, parseInt, parseJson } from "./reply.js";

export type { Binding, Script, ScriptCall } from "./binding.js";
export type { GuardReply, LatchReply, LeaderReply } from "./coordination-replies.js";
export { holdState, ticketState } from "./hold-replies.js";
export type { AcquireReply, Grant, HoldState, MultiAcquireReply, ReleaseReply, SetPermitsReply, TicketState } from "./hold-replies.js";

/** Every script, bound: `scripts.acquire.call(keys, args)` makes the call an endpoint sends. */
export const scripts = {
  acquire: bind(LUA.acquire, true, parseAcquire("acquire")),
  release: bind(LUA.release, false, parseRelease("release")),
  leaveQueue: bind(LUA.leaveQueue, false, parseInt("leave-queue")),
  stepAside: bind(LUA.stepAside, false, parseInt("step-aside")),
  acquireShared: bind(LUA.acquireShared, true, parseAcquire("acquire-shared")),
  releaseShared: bind(LUA.releaseShared, false, parseRelease("release-shared")),
  leaveQueueShared: bind(LUA.leaveQueueShared, false, parseInt("leave-queue-shared")),
  setPermits: bind(LUA.setPermits, true, parseSetPermits),
  keepalive: bind(LUA.keepalive, true, parseArray("keepalive")),
  check: bind(LUA.check, false, (reply) => holdState("check", reply)),
  raiseFence: bind(LUA.raiseFence, true, parseInt("raise-fence")),
  guardWrite: bind(LUA.guardWrite, true, parseGuard),
  inspect: bind(LUA.inspect, false, parseJson("inspect")),
  inspectCoordination: bind(LUA.inspectCoordination, false, parseJson("inspect-coordination")),
  proclaim: bind(LUA.proclaim, false, (reply) => holdState("proclaim", reply)),
  readLeader: bind(LUA.readLeader, false, parseLeader),
  countDown: bind(LUA.countDown, true, parseLatch("count-down")),
  readLatch: bind(LUA.readLatch, false, parseLatch("read-latch")),
  forceRelease: bind(LUA.forceRelease, false, parseJson("force-release")),
  acquireMulti: bind(LUA.acquireMulti, true, parseAcquireMulti),
  releaseMulti: bind(LUA.releaseMulti, false, parseRelease("release-multi")),
  leaveMulti: bind(LUA.leaveMulti, false, parseInt("leave-multi")),
} as const;
