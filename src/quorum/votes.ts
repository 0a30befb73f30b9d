/**
 * The voting rules of quorum mode, as pure functions over the nodes' answers: no I/O here, so
 * every rule is tested with made-up votes (test/quorum/votes.test.ts), and the quorum store only
 * sends, collects and acts on what these decide.
 */
import type { NodeOutcome } from "../errors.js";
import type { AcquireResult, HoldState, ReleaseResult } from "../store/types.js";

/** One node's answer: its value, or the error that kept it from answering. */
export type Vote<T> =
  | { readonly node: number; readonly ok: true; readonly value: T }
  | { readonly node: number; readonly ok: false; readonly error: Error };

/** N/2+1. */
export const majorityOf = (n: number): number => Math.floor(n / 2) + 1;

/**
 * How many of N nodes must hold a permit of a semaphore of `limit` permits: more than N·L/(L+1).
 * Majorities intersect, which keeps one holder of a mutex; they do not keep L holders of a
 * semaphore: with 3 nodes and 2 permits, holders on nodes {0,1}, {1,2} and {0,2} fill no node
 * beyond 2, yet each has a majority. L+1 holders on q nodes each need (L+1)·q permits, more than
 * the N·L the nodes have, only when q > N·L/(L+1). For L = 1 that is a majority.
 */
export const quorumOf = (n: number, limit: number): number => Math.floor((n * limit) / (limit + 1)) + 1;

/**
 * Runs `op` on every node at once. Settles as soon as `decide(votesSoFar)` returns a decision, or
 * when every node has answered; each vote that arrives after that goes to `late`. `rest` settles
 * once every node has answered and what `late` returned has settled: a caller about to send the
 * same operation again waits for it, so no late reply's follow-up lands after the next round.
 */
export function fanOut<T, D>(
  count: number,
  op: (node: number) => Promise<T>,
  decide: (votes: readonly Vote<T>[], all: boolean) => D | undefined,
  late: (vote: Vote<T>) => Promise<unknown> | void = () => {},
): Promise<{ decision: D; votes: Vote<T>[]; rest: Promise<void> }> {
  let everyVote: () => void = () => {};
  const tails: Promise<unknown>[] = [];
  const rest = new Promise<void>((resolve) => { everyVote = resolve; }).then(() => Promise.allSettled(tails)).then(() => undefined);
  return new Promise((resolve) => {
    const votes: Vote<T>[] = [];
    let settled = false;
    let received = 0;
    const collect = (vote: Vote<T>): void => {
      received++;
      if (settled) {
        const tail = late(vote);
        if (tail) tails.push(tail);
      } else {
        votes.push(vote);
        const all = votes.length === count;
        const decision = decide(votes, all);
        if (decision !== undefined || all) {
          settled = true;
          // In the nodes' order, as errors list them.
          const ordered = [...votes].sort((a, b) => a.node - b.node);
          resolve({ decision: decision ?? (decide(ordered, true) as D), votes: ordered, rest });
        }
      }
      if (received === count) everyVote();
    };
    for (let node = 0; node < count; node++) {
      op(node).then(
        (value) => collect({ node, ok: true, value }),
        (error: unknown) => collect({ node, ok: false, error: error instanceof Error ? error : new Error(String(error)) }),
      );
    }
  });
}

/** How an acquire on N nodes came out. */
export type AcquireDecision =
  /**
   * A majority holds one hold: `hold`, with its lease token: the largest among the votes of a
   * hold founded now; the one a majority reports for a hold that was there (entered). `tokens`: a
   * multi-key hold's, key by key, when entered (a founded one takes each key's largest).
   */
  | { readonly outcome: "won"; readonly hold: string; readonly token: bigint; readonly entered: boolean; readonly tokens?: readonly bigint[] }
  /** Everyone answering holds it elsewhere: wait for a release, at most `waitMs`. */
  | { readonly outcome: "busy"; readonly waitMs: number }
  /** Some nodes said yes, not a majority: undo, pause at random, try again. */
  | { readonly outcome: "split" }
  /** The hold to re-enter is gone on a majority. */
  | { readonly outcome: "gone" }
  | { readonly outcome: "conflict"; readonly limit: number }
  /** Too few nodes answered to ever decide. */
  | { readonly outcome: "unreachable" };

/**
 * Decides an acquire from the votes so far; undefined while it is still open. A majority of yes
 * votes for one hold wins at once; it is lost as soon as the missing votes could not make one.
 */
export function decideAcquire(votes: readonly Vote<AcquireResult>[], n: number, all: boolean, need = majorityOf(n)): AcquireDecision | undefined {
  const m = need;
  type Reported = { token: bigint; tokens: readonly bigint[] | undefined; count: number };
  const byHold = new Map<string, { token: bigint; count: number; entered: number; agree: boolean; tokens: string | undefined; reported: Map<string, Reported> }>();
  for (const v of votes) {
    if (!v.ok || (v.value.status !== "founded" && v.value.status !== "entered")) continue;
    // A hold's lease token: the one its quorum chose where that was recorded, else the node's own.
    const token = v.value.leaseToken;
    // A multi-key hold's counters agree only if they agree on every key.
    const tokens = v.value.leaseTokens?.join(",");
    const group = byHold.get(v.value.ref.hold) ?? { token, count: 0, entered: 0, agree: true, tokens, reported: new Map<string, Reported>() };
    group.count++;
    if (v.value.status === "entered") group.entered++;
    if (token !== group.token || tokens !== group.tokens) group.agree = false;
    if (token > group.token) group.token = token;
    const value = `${token}/${tokens ?? ""}`;
    const same = group.reported.get(value) ?? { token, tokens: v.value.leaseTokens, count: 0 };
    same.count++;
    group.reported.set(value, same);
    byHold.set(v.value.ref.hold, group);
  }
  for (const [hold, g] of byHold) {
    if (g.count < m || !(g.agree || all)) continue;
    // Counters that agree (the usual case) settle with the fastest majority; otherwise every node
    // is waited for. A token a majority reports is the hold's: founded now, it exceeds every
    // earlier lease's (one of those nodes is in that lease's majority); entered, it is the one
    // chosen at the founding, which every node of that quorum reports (its own, or the recorded
    // one). A node outside that quorum may keep a copy of the hold under a token of its own (its
    // part was never counted, and its give-back was lost), and a joiner that comes while a founding
    // raises the nodes behind reads their own tokens: neither is taken, larger or not.
    const chosen = [...g.reported.values()].find((r) => r.count >= m);
    if (chosen) return { outcome: "won", hold, token: chosen.token, entered: g.entered >= m, ...(chosen.tokens && { tokens: chosen.tokens }) };
    // Founded now, no majority agrees: the largest token is chosen and every counter raised to it.
    if (g.entered === 0) return { outcome: "won", hold, token: g.token, entered: false };
    // Entered, and no majority reports one token: the hold's is not known. Undecided, as a split vote.
  }
  if (!all && [...byHold.values()].some((g) => g.count >= m)) return undefined;
  const missing = n - votes.length;
  const best = Math.max(0, ...[...byHold.values()].map((g) => g.count));
  if (!all && best + missing >= m) return undefined;
  const answered = votes.filter((v) => v.ok);
  const count = (status: AcquireResult["status"]): number => answered.filter((v) => v.ok && v.value.status === status).length;
  // A conflict (another stored limit, or fewer permits than asked) counts once a majority says
  // so: nodes may disagree for a while after a setPermits() that reached only a majority.
  if (count("conflict") >= m) {
    const first = answered.find((v) => v.ok && v.value.status === "conflict");
    if (first?.ok && first.value.status === "conflict") return { outcome: "conflict", limit: first.value.limit };
  }
  if (count("gone") >= majorityOf(n)) return { outcome: "gone" };
  // Too few nodes answer to ever decide: wait for the rest (each bounded by its timeout), so the
  // error can say what every node answered.
  if (answered.length + missing < m) return all ? { outcome: "unreachable" } : undefined;
  if (byHold.size > 0) return { outcome: "split" };
  if (!all && answered.length < m) return undefined;
  // How long until enough of the holders' leases would have run out.
  const waits = answered.flatMap((v) => (v.ok && v.value.status === "busy" ? [v.value.waitMs] : [])).sort((a, b) => a - b);
  return { outcome: "busy", waitMs: waits[m - 1] ?? waits[waits.length - 1] ?? 0 };
}

/** How a release on N nodes came out: decided, or open (too few answers to tell). */
export function decideRelease(votes: readonly Vote<ReleaseResult>[], n: number): ReleaseResult | undefined {
  const m = majorityOf(n);
  const gave = votes.filter((v) => v.ok && v.value.status !== "gone" && v.value.status !== "taken");
  if (gave.length >= m) {
    return gave.some((v) => v.ok && v.value.status === "held") ? { status: "held" } : { status: "released" };
  }
  if (undecided(votes, n, gave.length)) return undefined;
  const taken = votes.filter((v) => v.ok && v.value.status === "taken").length;
  return taken >= m ? { status: "taken" } : { status: "gone" };
}

/**
 * A hold's state on N nodes: held by `need` of them (a majority, or a semaphore's quorumOf), taken
 * if a majority saw another hold, else gone.
 */
export function decideHold(votes: readonly Vote<HoldState>[], n: number, need = majorityOf(n)): HoldState | undefined {
  const held = votes.filter((v) => v.ok && v.value === "held").length;
  if (held >= need) return "held";
  if (undecided(votes, n, held, need)) return undefined;
  return votes.filter((v) => v.ok && v.value === "taken").length >= majorityOf(n) ? "taken" : "gone";
}

/**
 * Too few answers to tell yes from no: the nodes that did not answer could still make a majority
 * either way. That calls for asking again, or a QuorumError, never a verdict.
 */
export function undecided(votes: readonly Vote<unknown>[], n: number, yes: number, need = majorityOf(n)): boolean {
  const m = need;
  const answered = votes.filter((v) => v.ok).length;
  const missing = n - answered;
  return answered < m || (yes < m && yes + missing >= m);
}

/**
 * Each node's outcome, for QuorumError. `refusal` says why an answer did not count as a yes, or
 * undefined when it did.
 */
export function outcomes<T>(votes: readonly Vote<T>[], names: readonly string[], refusal: (value: T) => string | undefined): NodeOutcome[] {
  return votes.map((v) => {
    const node = names[v.node] ?? String(v.node);
    if (!v.ok) return { node, ok: false, error: v.error };
    const why = refusal(v.value);
    return why === undefined ? { node, ok: true } : { node, ok: false, error: new Error(why) };
  });
}
