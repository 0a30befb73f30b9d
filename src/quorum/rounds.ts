/**
 * Asking the nodes again: how many rounds a quorum call may take, the random pause between them,
 * and the retry of an operation whose answers cannot decide yet. Every operation is idempotent, so
 * asking a node again is safe.
 */
import type { Clock } from "../clock.js";
import { pause } from "../deadline.js";
import { fanOut, type Vote } from "./votes.js";

/**
 * When the answers cannot decide (a blip: a timeout, a reconnect), the question is asked again
 * this many times, after a short random pause, before a QuorumError: a majority that is really
 * down still fails within a few per-node timeouts.
 */
export const RETRIES = 2;

/** At most this many rounds per call (for the bound on how long one call can take). */
export const QUORUM_ROUNDS = RETRIES + 1;

/**
 * After a split vote every contender undoes its part and pauses for a random time before it tries
 * again, so they do not collide again; the pause scales with the attempt's round trip.
 */
export const splitPauseMs = (attemptMs: number): number => Math.random() * Math.max(20, 3 * attemptMs);

/**
 * Runs `op` on each of `n` nodes and returns the votes as soon as they decide (the slower nodes'
 * calls still run, unwatched: every operation asked this way is idempotent and names its hold, so
 * a late one changes nothing a later call relies on); while the answers cannot decide, asks again
 * the nodes that did not answer (RETRIES times at most, after a short random pause).
 */
export async function askNodes<T, D>(
  n: number, clock: Clock, op: (node: number) => Promise<T>, decide: (votes: readonly Vote<T>[]) => D | undefined,
): Promise<Vote<T>[]> {
  // Waiting for every node made a release or a check as slow as the slowest of the N: on a loaded
  // machine the 5th of 5 answers was often milliseconds behind the 3rd.
  let { votes } = await fanOut(n, op, (sofar) => decide(sofar));
  for (let round = 0; round < RETRIES && decide(votes) === undefined; round++) {
    await pause(clock, splitPauseMs(0));
    const missing = votes.filter((v) => !v.ok).map((v) => v.node);
    const again = await Promise.all(missing.map((node) => op(node).then(
      (value): Vote<T> => ({ node, ok: true, value }),
      (error: unknown): Vote<T> => ({ node, ok: false, error: error instanceof Error ? error : new Error(String(error)) }),
    )));
    votes = votes.map((v) => again.find((a) => a.node === v.node) ?? v);
  }
  return votes;
}
