/**
 * Who leads an election, as Redis shows it: reading it (one node, or what a majority of them shows:
 * the store decides) and watching it change. A candidate is the leader once its campaign stored its value and announced
 * itself (proclaim.lua): until then its hold on the lock makes it no leader yet, only the next.
 */
import { Interruption, pause, race } from "../deadline.js";
import type { Runtime } from "../runtime.js";
import type { LeaderReply } from "../store/types.js";

/** The leader of an election. */
export interface Leader {
  /** The owner its lease is held as (`lease.owner`): host, pid and a unique id. */
  readonly owner: string;
  /** The value it proclaimed; null if it stands for none. */
  readonly value: string | null;
  /** Its lease's fencing token: each new leader has a larger one. */
  readonly fencingToken: bigint;
  /** Time left on its lease in Redis when read, ms (renewed while it leads). */
  readonly expiresInMs: number;
}

/** The leader a store's reading shows: its lock's holder once it proclaimed itself, else none. */
export function leaderOf(reading: LeaderReply | null): Leader | null {
  if (!reading?.proclaimed) return null;
  return { owner: reading.owner, value: reading.value, fencingToken: reading.token, expiresInMs: Math.max(0, reading.pttlMs) };
}

/** Whether two readings show the same leader with the same value (or both none). */
export function sameLeader(a: Leader | null, b: Leader | null): boolean {
  if (a === null || b === null) return a === b;
  return a.fencingToken === b.fencingToken && a.owner === b.owner && a.value === b.value;
}

export interface ObserveRequest {
  readonly rt: Pick<Runtime, "clock" | "closed">;
  /** Listens for changes (Redis: the election's channel; another store: its own wake-ups or a poll). */
  readonly listen: (poke: () => void) => { readonly ready: Promise<unknown>; release(): void };
  readonly read: () => Promise<Leader | null>;
  readonly signal: AbortSignal | undefined;
}

/**
 * A first reading, then one more whenever the leader may have changed: an announcement on the
 * election's channel ("e": a leader proclaimed itself, or left with nobody to take over), a
 * reconnect of the subscriber (announcements may have been missed), or the moment the leader's
 * lease would run out in Redis unless renewed (a leader that died announces nothing). Yields only
 * changes. Readings coalesce: a slow consumer gets the latest state, not every step in between.
 * Ends (returns) when `signal` aborts or the Surelock is closed; a failed reading throws.
 */
export async function* observeLeader(o: ObserveRequest): AsyncGenerator<Leader | null, void, undefined> {
  const { rt } = o;
  const stop = new Interruption({ clock: rt.clock, signals: [o.signal, rt.closed] });
  // First pulled after its signal or close(): nothing to watch (and no connection to open).
  if (stop.signal.aborted) return stop.dispose();
  let stale = true;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    stale = true;
    wake?.();
  };
  const subscription = o.listen(poke);
  try {
    await race(subscription.ready, stop.signal);
    let last: Leader | null | undefined;
    for (;;) {
      stale = false;
      const sentAt = rt.clock.now();
      const current = await race(o.read(), stop.signal);
      if (last === undefined || !sameLeader(last, current)) {
        last = current;
        yield current;
      }
      if (stale) continue;
      // Its lease in Redis runs out no earlier than this (Redis read its PTTL after we sent the
      // reading): look again then, and once more if it was renewed meanwhile.
      const expiresAt = current === null ? Infinity : sentAt + current.expiresInMs + 1;
      await pause(rt.clock, expiresAt - rt.clock.now(), stop.signal, (done) => { wake = done; });
      wake = undefined;
      stop.throwIfInterrupted();
    }
  } catch (error) {
    // The caller's signal or close(): the observation is over, not failed.
    if (stop.signal.aborted && error === stop.signal.reason) return;
    throw error;
  } finally {
    subscription.release();
    stop.dispose();
  }
}
