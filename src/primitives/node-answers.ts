/**
 * What the nodes said to a broadcast script (an election's value, a latch's count): the same rule
 * as every quorum operation — a fact counts once a majority of nodes states it — written once for
 * the primitives that are not locks. With one node its answer, or its own error, is the answer.
 */
import { QuorumError } from "../errors.js";
import { majorityOf, type Vote } from "../quorum/votes.js";
import type { NodeAnswer } from "../store/types.js";

/**
 * The values of the nodes that answered, if a majority did. Otherwise it throws: the node's own
 * error with one node, a QuorumError naming every node with several.
 */
export function answered<R>(key: string, operation: string, answers: readonly NodeAnswer<R>[]): R[] {
  const values = answers.flatMap((a) => (a.ok ? [a.value] : []));
  if (values.length >= majorityOf(answers.length)) return values;
  const only = answers[0];
  if (answers.length === 1 && only && !only.ok) throw only.error;
  throw new QuorumError(key, operation, answers.map((a) => (a.ok ? { node: a.node, ok: true } : { node: a.node, ok: false, error: a.error })));
}

/** The answers as votes, for the voting rules of quorum mode (src/quorum/votes.ts). */
export function votesOf<R>(answers: readonly NodeAnswer<R>[]): Vote<R>[] {
  return answers.map((a, node) => (a.ok ? { node, ok: true, value: a.value } : { node, ok: false, error: a.error }));
}
