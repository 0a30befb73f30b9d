/**
 * Fencing tokens of a multi-key hold in quorum mode: each key is a quorum register of its own, so
 * the lease takes, key by key, the largest lease token among the votes for the hold, and each node
 * that issued a smaller one for a key has that key's counter raised to it (raise-fence on the key's
 * mutex hash, exactly as for a mutex).
 */
import type { AcquireResult, HoldRef, LockTarget, SingleTarget } from "../store/types.js";
import type { Vote } from "./votes.js";

/** Each key's largest lease token among the yes votes for `hold`; undefined for a lock of one key. */
export function chosenTokens(votes: readonly Vote<AcquireResult>[], hold: string): bigint[] | undefined {
  let chosen: bigint[] | undefined;
  for (const v of votes) {
    if (!v.ok || (v.value.status !== "founded" && v.value.status !== "entered") || v.value.ref.hold !== hold) continue;
    const tokens = v.value.leaseTokens;
    if (!tokens) return undefined;
    chosen = tokens.map((t, k) => (chosen?.[k] !== undefined && (chosen[k] as bigint) > t ? (chosen[k] as bigint) : t));
  }
  return chosen;
}

/** Whether a late vote's tokens are all within the lease's (a lock of one key: nothing more to compare). */
export function withinTokens(tokens: readonly bigint[] | undefined, chosen: readonly bigint[] | undefined): boolean {
  if (!tokens || !chosen) return true;
  return tokens.every((t, k) => t <= (chosen[k] ?? 0n));
}

/**
 * The raises one node needs so that no counter of the hold's keys there stays below the lease's
 * token and every key there reports it: `token` is the lease token the node reported (the first
 * key's for a multi-key hold), `tokens` every key's. One that reports a larger token (a copy of
 * the hold under its own, never counted) keeps its counter and gets the lease's recorded beside it.
 */
export function raisesFor(target: LockTarget, ref: HoldRef, token: bigint, tokens: readonly bigint[] | undefined): { target: SingleTarget; chosen: bigint }[] {
  if (target.family !== "multi") return token !== ref.token ? [{ target, chosen: ref.token }] : [];
  const chosen = ref.tokens ?? [];
  return target.keys.each.flatMap((keys, k) => {
    const want = chosen[k] ?? 0n;
    return (tokens?.[k] ?? 0n) !== want ? [{ target: { family: "exclusive", keys } as const, chosen: want }] : [];
  });
}
