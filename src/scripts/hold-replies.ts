/**
 * The replies of the scripts that take, keep and give back holds: acquire (single, shared, several
 * keys), release, set-permits, and the hold and ticket states that check and keepalive report.
 */
import { coded, int, text, unexpected } from "./reply.js";

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

/** Reads an acquire or acquire-shared reply. */
export function parseAcquire(script: string): (reply: unknown) => AcquireReply {
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

/** Reads an acquire-multi reply. */
export function parseAcquireMulti(reply: unknown): MultiAcquireReply {
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

/** Reads the reply of a release, release-shared or release-multi. */
export function parseRelease(script: string): (reply: unknown) => ReleaseReply {
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

/** Reads a set-permits reply. */
export function parseSetPermits(reply: unknown): SetPermitsReply {
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

/** Reads a hold check (check, proclaim, a keepalive item): 1 held, 0 gone, -1 taken. */
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

/** Reads a keepalive item for a ticket. */
export function ticketState(reply: unknown): TicketState {
  const [code, a, b] = coded("keepalive", reply);
  if (code === 1) return { status: "granted", token: BigInt(int("keepalive", reply, a)), pttlMs: int("keepalive", reply, b) };
  if (code === 2) return { status: "turn" };
  if (code === 3) return { status: "done" };
  if (code === 0) return { status: "queued", position: int("keepalive", reply, a), counter: BigInt(int("keepalive", reply, b)) };
  return unexpected("keepalive", reply);
}
