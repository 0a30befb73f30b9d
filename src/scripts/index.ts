/**
 * The scripts, each defined once: its source and SHA (generated from src/scripts/*.lua), its
 * calling convention (KEYS and ARGV by the names its header declares), how its reply is read, and
 * whether its write must reach replicas. Every store, the guard, the CLI and the script tests call
 * scripts through these bindings; a reply we do not understand is a ScriptError, never a guess.
 */
import type { RedisArg } from "../adapters/types.js";
import { ScriptError } from "../errors.js";
import { LUA } from "./lua.generated.js";

type Source = (typeof LUA)[keyof typeof LUA];

/** One script, as the endpoint sends it. */
export interface Script<R> {
  readonly name: string;
  readonly sha: string;
  readonly lua: string;
  /**
   * Whether its write grants, prolongs or fences a right: with the `replicas` option it is
   * followed by WAIT and fails unless enough replicas have it. Releases and departures are not:
   * losing one in a failover only keeps a lock until its ttl.
   */
  readonly acknowledged: boolean;
  parse(reply: unknown): R;
}

/** A script with its KEYS and ARGV, ready to send. */
export interface ScriptCall<R> {
  readonly script: Script<R>;
  readonly keys: readonly string[];
  readonly args: readonly RedisArg[];
}

/** A script bound to its header: `call` takes KEYS and ARGV as records of the declared names. */
export interface Binding<S extends Source, R> extends Script<R> {
  call(
    keys: Record<S["keys"][number], string>,
    args: Record<S["args"][number], RedisArg>,
    rest?: { readonly keys?: readonly string[]; readonly args?: readonly RedisArg[] },
  ): ScriptCall<R>;
}

function bind<S extends Source, R>(source: S, acknowledged: boolean, parse: (reply: unknown) => R): Binding<S, R> {
  const script: Binding<S, R> = {
    name: source.name,
    sha: source.sha,
    lua: source.lua,
    acknowledged,
    parse,
    call(keys, args, rest) {
      return {
        script,
        keys: [...source.keys.map((k: S["keys"][number]) => keys[k]), ...(rest?.keys ?? [])],
        args: [...source.args.map((a: S["args"][number]) => args[a]), ...(rest?.args ?? [])],
      };
    },
  };
  return script;
}

// ---------------------------------------------------------------------------------------------
// Replies

function unexpected(script: string, reply: unknown): never {
  throw new ScriptError(`unexpected reply from ${script}.lua: ${JSON.stringify(reply)}`);
}

/** The reply as an array whose first element is an integer code. */
function coded(script: string, reply: unknown): [number, ...unknown[]] {
  if (!Array.isArray(reply) || typeof reply[0] !== "number") unexpected(script, reply);
  return reply as [number, ...unknown[]];
}

function int(script: string, reply: unknown, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value)) unexpected(script, reply);
  return value;
}

function text(script: string, reply: unknown, value: unknown): string {
  if (typeof value !== "string") unexpected(script, reply);
  return value;
}

/** What an acquire attempt got. */
export type AcquireReply =
  /**
   * `token` is the hold's own on this node; `leaseToken` the one its quorum chose (recorded by
   * raise-fence), or the same.
   */
  | { readonly status: "founded" | "entered"; readonly token: bigint; readonly hold: string; readonly pttlMs: number; readonly leaseToken: bigint }
  /** `counter`: the lock's fencing counter when the reply was made (a grant later has a larger token). */
  | { readonly status: "busy"; readonly waitMs: number; readonly position: number; readonly counter: bigint }
  | { readonly status: "gone" }
  | { readonly status: "conflict"; readonly limit: number };

function parseAcquire(script: string): (reply: unknown) => AcquireReply {
  return (reply) => {
    const [code, a, b, c, d] = coded(script, reply);
    if (code === 1 || code === 2) {
      return {
        status: code === 1 ? "founded" : "entered",
        token: BigInt(int(script, reply, a)),
        hold: text(script, reply, b),
        pttlMs: int(script, reply, c),
        leaseToken: BigInt(int(script, reply, d)),
      };
    }
    // A PTTL of -1/-2 (no expiry / no key) only means "try again soon".
    if (code === 0) {
      return { status: "busy", waitMs: Math.max(0, int(script, reply, a)), position: int(script, reply, b), counter: BigInt(int(script, reply, c)) };
    }
    if (code === -1) return { status: "gone" };
    if (code === -2) return { status: "conflict", limit: int(script, reply, a) };
    return unexpected(script, reply);
  };
}

/** What an attempt on several mutexes at once got: as AcquireReply, with a token per key (in KEYS order). */
export type MultiAcquireReply =
  | {
    readonly status: "founded" | "entered"; readonly hold: string; readonly pttlMs: number;
    /** Each key's own token on this node; `leaseTokens` the ones its quorum chose (field l), or the same. */
    readonly tokens: readonly bigint[]; readonly leaseTokens: readonly bigint[];
  }
  | { readonly status: "busy"; readonly waitMs: number; readonly position: number; readonly counter: bigint }
  | { readonly status: "gone" };

function parseAcquireMulti(reply: unknown): MultiAcquireReply {
  const s = "acquire-multi";
  const [code, a, b, c, ...rest] = coded(s, reply);
  if (code === 1 || code === 2) {
    const all = [c, ...rest];
    if (all.length === 0 || all.length % 2 !== 0) unexpected(s, reply);
    const tokens: bigint[] = [];
    const leaseTokens: bigint[] = [];
    for (let i = 0; i < all.length; i += 2) {
      tokens.push(BigInt(int(s, reply, all[i])));
      leaseTokens.push(BigInt(int(s, reply, all[i + 1])));
    }
    return { status: code === 1 ? "founded" : "entered", hold: text(s, reply, a), pttlMs: int(s, reply, b), tokens, leaseTokens };
  }
  if (code === 0) return { status: "busy", waitMs: Math.max(0, int(s, reply, a)), position: int(s, reply, b), counter: BigInt(int(s, reply, c)) };
  if (code === -1) return { status: "gone" };
  return unexpected(s, reply);
}

/** The lock handed to a queued waiter by the release that freed it. */
export interface Grant {
  readonly ticket: string;
  readonly token: bigint;
  /** The granted hold's PTTL, ms, when it was founded. */
  readonly pttlMs: number;
}

/** What a release did. */
export type ReleaseReply =
  | { readonly status: "held"; readonly entries: number }
  | { readonly status: "freed"; readonly grants: readonly Grant[] }
  | { readonly status: "released" }
  | { readonly status: "gone" }
  | { readonly status: "taken" };

function parseRelease(script: string): (reply: unknown) => ReleaseReply {
  return (reply) => {
    const [code, ...rest] = coded(script, reply);
    switch (code) {
      case 2: return { status: "held", entries: int(script, reply, rest[0]) };
      case 3: return { status: "released" };
      case 0: return { status: "gone" };
      case -1: return { status: "taken" };
      case 1: {
        if (rest.length % 3 !== 0) unexpected(script, reply);
        const grants: Grant[] = [];
        for (let i = 0; i < rest.length; i += 3) {
          grants.push({
            ticket: text(script, reply, rest[i]),
            token: BigInt(int(script, reply, rest[i + 1])),
            pttlMs: int(script, reply, rest[i + 2]),
          });
        }
        return { status: "freed", grants };
      }
      default: return unexpected(script, reply);
    }
  };
}

/** What a change of a semaphore's limit did: `previous` is 0 where none was stored. */
export type SetPermitsReply =
  | { readonly status: "set"; readonly previous: number; readonly grants: readonly Grant[] }
  | { readonly status: "replayed" };

function parseSetPermits(reply: unknown): SetPermitsReply {
  const [code, previous, ...rest] = coded("set-permits", reply);
  if (code === 2) return { status: "replayed" };
  if (code !== 1) return unexpected("set-permits", reply);
  // The grants are laid out as a release's.
  const freed = parseRelease("set-permits")([1, ...rest]);
  if (freed.status !== "freed") return unexpected("set-permits", reply);
  return { status: "set", previous: int("set-permits", reply, previous), grants: freed.grants };
}

/** A hold as Redis sees it. */
export type HoldState = "held" | "gone" | "taken";

export function holdState(script: string, reply: unknown): HoldState {
  if (reply === 1) return "held";
  if (reply === 0) return "gone";
  if (reply === -1) return "taken";
  return unexpected(script, reply);
}

/** What a ticket refresh found. */
export type TicketState =
  | { readonly status: "granted"; readonly token: bigint; readonly pttlMs: number }
  | { readonly status: "turn" }
  | { readonly status: "queued"; readonly position: number; readonly counter: bigint }
  /** The ticket's hold was granted and given back already: a refresh that came too late. */
  | { readonly status: "done" };

export function ticketState(reply: unknown): TicketState {
  const [code, a, b] = coded("keepalive", reply);
  if (code === 1) return { status: "granted", token: BigInt(int("keepalive", reply, a)), pttlMs: int("keepalive", reply, b) };
  if (code === 2) return { status: "turn" };
  if (code === 3) return { status: "done" };
  if (code === 0) return { status: "queued", position: int("keepalive", reply, a), counter: BigInt(int("keepalive", reply, b)) };
  return unexpected("keepalive", reply);
}

/** Outcome of a guarded write. */
export type GuardReply =
  | { readonly status: "written"; readonly reply: unknown }
  | { readonly status: "refused"; readonly highestToken: bigint }
  | { readonly status: "replayed" };

function parseGuard(reply: unknown): GuardReply {
  const [code, value] = coded("guard-write", reply);
  if (code === 1) return { status: "written", reply: value };
  if (code === 0) return { status: "refused", highestToken: BigInt(text("guard-write", reply, value)) };
  if (code === 2) return { status: "replayed" };
  return unexpected("guard-write", reply);
}

/** Who holds an election's lock on one node, and what it proclaimed. */
export interface LeaderReply {
  readonly owner: string;
  readonly hold: string;
  /** The token the leader proclaimed (its lease's), or this node's own token for the hold until then. */
  readonly token: bigint;
  readonly pttlMs: number;
  readonly proclaimed: boolean;
  /** The proclaimed value; null when none was proclaimed (or not yet). */
  readonly value: string | null;
}

function parseLeader(reply: unknown): LeaderReply | null {
  if (!Array.isArray(reply)) unexpected("read-leader", reply);
  if (reply.length === 0) return null;
  const [owner, hold, token, pttl, proclaimed, value] = reply as unknown[];
  const how = int("read-leader", reply, proclaimed);
  return {
    owner: text("read-leader", reply, owner),
    hold: text("read-leader", reply, hold),
    token: BigInt(text("read-leader", reply, token)),
    pttlMs: int("read-leader", reply, pttl),
    proclaimed: how !== 0,
    value: how === 1 ? text("read-leader", reply, value) : null,
  };
}

/** A latch's count on one node. */
export type LatchReply =
  | { readonly status: "counted" | "unchanged"; readonly left: number }
  | { readonly status: "conflict"; readonly count: number };

function parseLatch(script: string): (reply: unknown) => LatchReply {
  return (reply) => {
    const [code, n] = coded(script, reply);
    const value = int(script, reply, n);
    if (code === 1) return { status: script === "count-down" ? "counted" : "unchanged", left: value };
    if (code === 2) return { status: "unchanged", left: value };
    if (code === -2) return { status: "conflict", count: value };
    return unexpected(script, reply);
  };
}

/** A JSON document (the CLI's scripts answer with one). */
function parseJson(script: string): (reply: unknown) => unknown {
  return (reply) => {
    if (typeof reply !== "string") unexpected(script, reply);
    try {
      return JSON.parse(reply) as unknown;
    } catch {
      return unexpected(script, reply);
    }
  };
}

function parseArray(script: string): (reply: unknown) => unknown[] {
  return (reply) => (Array.isArray(reply) ? reply : unexpected(script, reply));
}

function parseInt(script: string): (reply: unknown) => number {
  return (reply) => int(script, reply, reply);
}

// ---------------------------------------------------------------------------------------------
// The bindings

export const scripts = {
  acquire: bind(LUA.acquire, true, parseAcquire("acquire")),
  release: bind(LUA.release, false, parseRelease("release")),
  leaveQueue: bind(LUA.leaveQueue, false, parseInt("leave-queue")),
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
