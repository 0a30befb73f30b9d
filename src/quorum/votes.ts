/** Fan-out: run one operation on every node at once and collect each node's vote. */
import type { NodeOutcome } from "../errors.js";
import type { SingleStore } from "../store.js";

/** One node's answer: its value, or the error that kept it from answering. */
export type Vote<T> = { readonly node: SingleStore; readonly ok: true; readonly value: T } | { readonly node: SingleStore; readonly ok: false; readonly error: Error };

/**
 * Runs `op` on every node in parallel and waits for all of them. Each node is bounded by its own
 * command timeout (the endpoint's deadline), so a dead or partitioned node costs at most that.
 */
export function fanOut<T>(nodes: readonly SingleStore[], op: (node: SingleStore) => Promise<T>): Promise<Vote<T>[]> {
  return Promise.all(
    nodes.map((node) =>
      op(node).then(
        (value): Vote<T> => ({ node, ok: true, value }),
        (error: unknown): Vote<T> => ({ node, ok: false, error: error instanceof Error ? error : new Error(String(error)) }),
      ),
    ),
  );
}

/**
 * Like fanOut, but settles as soon as `enough(votesSoFar)` holds, without waiting for the slower
 * nodes; each vote that arrives after that goes to `late` (so the caller can keep or undo it).
 */
export function fanOutUntil<T>(
  nodes: readonly SingleStore[],
  op: (node: SingleStore) => Promise<T>,
  enough: (votes: readonly Vote<T>[]) => boolean,
  late: (vote: Vote<T>) => void,
): Promise<Vote<T>[]> {
  return new Promise((resolve) => {
    const votes: Vote<T>[] = [];
    let settled = false;
    const collect = (vote: Vote<T>): void => {
      if (settled) return late(vote);
      votes.push(vote);
      if (votes.length === nodes.length || enough(votes)) {
        settled = true;
        // In the nodes' order, as fanOut gives them (errors list the nodes in that order).
        resolve([...votes].sort((a, b) => nodes.indexOf(a.node) - nodes.indexOf(b.node)));
      }
    };
    for (const node of nodes) {
      op(node).then(
        (value) => collect({ node, ok: true, value }),
        (error: unknown) => collect({ node, ok: false, error: error instanceof Error ? error : new Error(String(error)) }),
      );
    }
  });
}

/** N/2+1. */
export const majorityOf = (n: number): number => Math.floor(n / 2) + 1;

/**
 * Each node's outcome, for QuorumError. `refusal` says why an answer did not count as a yes
 * (for example "held by another owner"), or undefined when it did.
 */
export function outcomes<T>(votes: readonly Vote<T>[], refusal: (value: T) => string | undefined): NodeOutcome[] {
  return votes.map((v) => {
    if (!v.ok) return { node: v.node.name, ok: false, error: v.error };
    const why = refusal(v.value);
    return why === undefined ? { node: v.node.name, ok: true } : { node: v.node.name, ok: false, error: new Error(why) };
  });
}
