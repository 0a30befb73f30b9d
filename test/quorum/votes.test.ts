/**
 * The voting rules of quorum mode, on made-up votes: what a majority decides, when a vote is still
 * open, and that a fan-out tells when every node has answered. No servers: the rules are pure.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AcquireResult, HoldState, LatchReply, LeaderReply, LockTarget, ReleaseResult } from "../../src/store/types.js";
import { QuorumError } from "../../src/errors.js";
import { answered, decideLatch, decideLeader } from "../../src/quorum/coordination.js";
import { systemClock } from "../../src/clock.js";
import { askNodes } from "../../src/quorum/rounds.js";
import { decideAcquire, decideHold, decideRelease, fanOut, majorityOf, quorumOf, undecided, type Vote } from "../../src/quorum/votes.js";

const target = { family: "exclusive", keys: {} } as unknown as LockTarget;
const yes = (node: number, hold: string, token: bigint, entered = false): Vote<AcquireResult> => ({
  node, ok: true, value: { status: entered ? "entered" : "founded", ref: { target, hold, token }, pttlMs: 1_000, leaseToken: token },
});
const busy = (node: number, waitMs: number): Vote<AcquireResult> => ({ node, ok: true, value: { status: "busy", waitMs, position: -1, counter: 0n } });
const gone = (node: number): Vote<AcquireResult> => ({ node, ok: true, value: { status: "gone" } });
const down = <T>(node: number): Vote<T> => ({ node, ok: false, error: new Error("timed out") });
const said = <T>(node: number, value: T): Vote<T> => ({ node, ok: true, value });

describe("quorum votes: majorities", () => {
  it("a majority is more than half of the nodes", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(majorityOf), [1, 2, 2, 3, 3, 4, 4]);
  });

  it("a semaphore of L permits needs more than N·L/(L+1) nodes: the least count that L+1 holders cannot all reach", () => {
    for (let n = 1; n <= 9; n++) {
      for (let limit = 1; limit <= 6; limit++) {
        const q = quorumOf(n, limit);
        if (limit === 1) assert.equal(q, majorityOf(n), "one permit: a majority");
        assert.ok(q <= n + 1);
        // Safe: L+1 holders on q nodes each would need more permits than the nodes have.
        assert.ok((limit + 1) * q > n * limit, `n=${n} L=${limit} q=${q}`);
        // Tight: with one node fewer, L+1 holders fit, laid out round the ring.
        const fewer = q - 1;
        if (fewer >= 1 && fewer <= n) {
          const used = new Array<number>(n).fill(0);
          for (let h = 0; h <= limit; h++) for (let j = 0; j < fewer; j++) used[(h * fewer + j) % n]! += 1;
          assert.ok(used.every((u) => u <= limit), `n=${n} L=${limit}: ${limit + 1} holders on ${fewer} nodes each fit`);
        }
      }
    }
    assert.deepEqual([quorumOf(3, 2), quorumOf(5, 2), quorumOf(5, 3), quorumOf(5, 4), quorumOf(7, 2)], [3, 4, 4, 5, 5]);
  });

  it("a semaphore's acquire and hold are decided with its larger quorum", () => {
    const three = [yes(0, "h", 1n), yes(1, "h", 1n), yes(2, "h", 1n)];
    assert.equal(decideAcquire(three, 5, false, 4), undefined, "3 of 5 is not enough for 2 permits");
    assert.deepEqual(decideAcquire([...three, busy(3, 10), busy(4, 10)], 5, true, 4), { outcome: "split" });
    assert.deepEqual(decideAcquire([...three, yes(4, "h", 1n)], 5, false, 4), { outcome: "won", hold: "h", token: 1n, entered: false });
    const held = (k: number): Vote<HoldState>[] => Array.from({ length: 5 }, (_, i) => said<HoldState>(i, i < k ? "held" : "gone"));
    assert.equal(decideHold(held(3), 5, 4), "gone");
    assert.equal(decideHold(held(4), 5, 4), "held");
  });

  it("undecided while the missing nodes could still tip the count either way", () => {
    assert.equal(undecided([said(0, 1), said(1, 1)], 5, 2), true, "2 yes, 3 missing");
    assert.equal(undecided([said(0, 1), said(1, 1), said(2, 1)], 5, 3), false, "a majority said yes");
    assert.equal(undecided([said(0, 0), said(1, 0), said(2, 0)], 5, 0), false, "3 no: 2 missing cannot make 3");
    assert.equal(undecided([said(0, 0), down(1), down(2)], 5, 0), true, "too few answered to tell");
  });
});

describe("quorum votes: acquire", () => {
  it("wins with the fastest majority when their tokens agree", () => {
    const d = decideAcquire([yes(0, "h", 7n), yes(2, "h", 7n), yes(3, "h", 7n)], 5, false);
    assert.deepEqual(d, { outcome: "won", hold: "h", token: 7n, entered: false });
  });

  it("waits for every node when tokens disagree, then takes the largest when no majority agrees", () => {
    const some = [yes(0, "h", 7n), yes(1, "h", 9n), yes(2, "h", 7n)];
    assert.equal(decideAcquire(some, 5, false), undefined);
    const all = [...some, busy(3, 50), down<AcquireResult>(4)];
    assert.deepEqual(decideAcquire(all, 5, true), { outcome: "won", hold: "h", token: 9n, entered: false });
  });

  it("entering a hold takes the token a majority reports, not a larger one of a node outside its quorum (torture seed 42)", () => {
    // The hold was founded with token 17 by nodes 0 and 2; node 1 keeps an uncounted copy under 18.
    const first = [yes(1, "h", 18n, true), yes(2, "h", 17n, true)];
    assert.equal(decideAcquire(first, 3, false), undefined, "they disagree: wait for node 0");
    assert.deepEqual(decideAcquire([...first, yes(0, "h", 17n, true)], 3, true), { outcome: "won", hold: "h", token: 17n, entered: true });
    // Node 0 does not answer: 17 and 18 once each, the hold's token is not known.
    assert.deepEqual(decideAcquire([...first, down<AcquireResult>(0)], 3, true), { outcome: "split" });
    // A smaller copy (a late part never raised) does not win either.
    assert.deepEqual(decideAcquire([yes(0, "h", 5n, true), yes(1, "h", 9n, true), yes(2, "h", 9n, true)], 3, true),
      { outcome: "won", hold: "h", token: 9n, entered: true });
  });

  it("a founding takes the token a majority issued, the largest only when no majority agrees (torture seed 42, 10 min)", () => {
    // Nodes 0 and 2 issued 7, node 1 (a counter born later) 900: 7 is above every earlier lease's
    // token (one of nodes 0 and 2 is in its majority), and a join by owner while node 1 is raised
    // reads 7 on nodes 0 and 2; choosing 900 left that joiner with another token.
    assert.deepEqual(decideAcquire([yes(1, "h", 900n), yes(0, "h", 7n), yes(2, "h", 7n)], 3, true), { outcome: "won", hold: "h", token: 7n, entered: false });
    assert.deepEqual(decideAcquire([yes(1, "h", 900n), yes(0, "h", 7n), busy(2, 10)], 3, true), { outcome: "won", hold: "h", token: 900n, entered: false });
    // While node 0 is raised to 900 a joiner sees 7 and 900 once each: undecided, not 7.
    assert.deepEqual(decideAcquire([yes(1, "h", 900n, true), yes(0, "h", 7n, true), busy(2, 10)], 3, true), { outcome: "split" });
  });

  it("entering a multi-key hold takes the tokens a majority reports, key by key", () => {
    const multi = (node: number, tokens: readonly bigint[]): Vote<AcquireResult> => ({
      node, ok: true, value: { status: "entered", ref: { target, hold: "m", token: tokens[0] as bigint, tokens }, pttlMs: 1_000, leaseToken: tokens[0] as bigint, leaseTokens: tokens },
    });
    const votes = [multi(0, [4n, 7n]), multi(1, [6n, 7n]), multi(2, [4n, 7n])];
    assert.deepEqual(decideAcquire(votes, 3, true), { outcome: "won", hold: "m", token: 4n, entered: true, tokens: [4n, 7n] });
  });

  it("a re-entry counts as entered only where a majority entered", () => {
    const d = decideAcquire([yes(0, "h", 3n, true), yes(1, "h", 3n, true), yes(2, "h", 3n)], 5, false);
    assert.deepEqual(d, { outcome: "won", hold: "h", token: 3n, entered: false });
  });

  it("a split: yes votes that can no longer make a majority", () => {
    assert.deepEqual(decideAcquire([busy(0, 10), busy(1, 10), busy(2, 10), yes(3, "h", 1n)], 5, false), { outcome: "split" });
    assert.equal(decideAcquire([busy(0, 10), yes(3, "h", 1n)], 5, false), undefined, "still open");
  });

  it("busy waits until enough holders' leases would have run out", () => {
    assert.deepEqual(decideAcquire([busy(0, 300), busy(1, 100), busy(2, 200)], 5, false), { outcome: "busy", waitMs: 300 });
    assert.deepEqual(decideAcquire([busy(0, 300), busy(1, 100), busy(2, 200), busy(3, 50), busy(4, 400)], 5, true),
      { outcome: "busy", waitMs: 200 });
  });

  it("gone when a majority no longer has the hold to re-enter", () => {
    assert.deepEqual(decideAcquire([gone(0), gone(1), gone(2)], 5, false), { outcome: "gone" });
  });

  it("a conflicting semaphore limit counts once a majority stores it, and is reported with that limit", () => {
    const conflict = (node: number): Vote<AcquireResult> => ({ node, ok: true, value: { status: "conflict", limit: 4 } });
    assert.deepEqual(decideAcquire([busy(0, 1), conflict(1), conflict(2)], 3, true), { outcome: "conflict", limit: 4 });
    assert.deepEqual(decideAcquire([busy(0, 1), conflict(1), busy(2, 1)], 3, true), { outcome: "busy", waitMs: 1 },
      "one node with another limit is no verdict: the caller waits as for any busy semaphore");
  });

  it("unreachable only once every node answered and too few could", () => {
    const votes = [down<AcquireResult>(0), down<AcquireResult>(1), busy(2, 1)];
    assert.equal(decideAcquire(votes.slice(0, 2), 3, false), undefined);
    assert.deepEqual(decideAcquire(votes, 3, true), { outcome: "unreachable" });
  });
});

describe("quorum votes: release and hold state", () => {
  const r = (status: ReleaseResult["status"]): ReleaseResult => (status === "freed" ? { status, grants: [] } : { status } as ReleaseResult);

  it("released by a majority; held if any of them still has entries", () => {
    assert.deepEqual(decideRelease([said(0, r("released")), said(1, r("freed")), said(2, r("released"))], 5), { status: "released" });
    assert.deepEqual(decideRelease([said(0, r("released")), said(1, r("held")), said(2, r("released"))], 5), { status: "held" });
  });

  it("taken only when a majority saw another hold; open while the rest could tip it", () => {
    assert.equal(decideRelease([said(0, r("taken")), said(1, r("released")), down(2)], 3), undefined);
    assert.deepEqual(decideRelease([said(0, r("taken")), said(1, r("taken")), said(2, r("released"))], 3), { status: "taken" });
    assert.deepEqual(decideRelease([said(0, r("gone")), said(1, r("taken")), said(2, r("released"))], 3), { status: "gone" });
  });

  it("a hold's state: held by a majority, taken, gone, or open", () => {
    const h = (...s: HoldState[]): Vote<HoldState>[] => s.map((v, i) => said(i, v));
    assert.equal(decideHold(h("held", "held", "gone"), 3), "held");
    assert.equal(decideHold(h("taken", "taken", "held"), 3), "taken");
    assert.equal(decideHold(h("gone", "taken", "held"), 3), "gone");
    assert.equal(decideHold([said<HoldState>(0, "held"), down<HoldState>(1)], 3), undefined);
  });
});

describe("quorum votes: fan-out", () => {
  /** A node's answer, released by the test. */
  const deferred = <T>(): { promise: Promise<T>; resolve: (value: T) => void } => {
    let resolve: (value: T) => void = () => {};
    const promise = new Promise<T>((r) => { resolve = r; });
    return { promise, resolve };
  };

  it("settles at the decision, hands later votes to `late`, and `rest` waits for every vote and what `late` started", async () => {
    const answers = [deferred<number>(), deferred<number>(), deferred<number>()];
    const lateWork = deferred<void>();
    const seen: string[] = [];
    const out = await (async () => {
      const pending = fanOut(3, (i) => (answers[i] as { promise: Promise<number> }).promise,
        (votes) => (votes.filter((v) => v.ok).length >= 2 ? "decided" : undefined),
        (vote) => { seen.push(`late ${vote.node}`); return lateWork.promise.then(() => { seen.push("late work done"); }); });
      answers[0]?.resolve(1);
      answers[2]?.resolve(1);
      return pending;
    })();
    assert.equal(out.decision, "decided");
    assert.deepEqual(out.votes.map((v) => v.node), [0, 2]);
    let restDone = false;
    void out.rest.then(() => { restDone = true; seen.push("rest"); });
    answers[1]?.resolve(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(seen, ["late 1"], "the straggler went to `late`; `rest` waits for what it started");
    assert.equal(restDone, false);
    lateWork.resolve();
    await out.rest;
    assert.deepEqual(seen, ["late 1", "late work done", "rest"]);
  });

  it("askNodes (release, isHeld) returns at the first majority that decides, while two of five nodes have not answered", async () => {
    const silent = new Promise<ReleaseResult>(() => {});
    let asked = 0;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error("askNodes waited for the silent nodes")), 2_000); });
    const votes = await Promise.race([askNodes(5, systemClock, (i) => {
      asked++;
      return i < 3 ? Promise.resolve<ReleaseResult>({ status: "released" }) : silent;
    }, (v) => decideRelease(v, 5)), bound]).finally(() => clearTimeout(timer));
    assert.equal(asked, 5, "sent to every node");
    assert.deepEqual(votes.map((v) => v.node), [0, 1, 2]);
    assert.deepEqual(decideRelease(votes, 5), { status: "released" });
  });

  it("an undecided fan-out settles when every node answered, errors as votes", async () => {
    const out = await fanOut(2, (i) => (i === 0 ? Promise.resolve("a") : Promise.reject(new Error("down"))), () => undefined as string | undefined);
    assert.equal(out.decision, undefined);
    assert.deepEqual(out.votes.map((v) => v.ok), [true, false]);
    await out.rest;
  });
});

describe("coordination decided by a quorum (elections and latches)", () => {
  const reading = (hold: string, pttlMs: number, proclaimed: boolean, seq: number, value: string | null = null): LeaderReply =>
    ({ owner: `owner-${hold}`, hold, token: 7n, pttlMs, proclaimed, value, seq });

  it("answers only when a majority of nodes answered, else a QuorumError naming every node", () => {
    assert.deepEqual(answered("e", "leader", [said(0, 1), down(1), said(2, 3)], ["a", "b", "c"]), [1, 3]);
    assert.throws(() => answered("e", "leader", [said(0, 1), down(1), down(2)], ["a", "b", "c"]),
      (e: unknown) => e instanceof QuorumError && e.nodes.map((n) => `${n.node}:${n.ok}`).join() === "a:true,b:false,c:false");
  });

  it("a leader is the hold a majority shows, with its newest kept value and the majority's life", () => {
    const kept = (r: LeaderReply, seq: number, value: string | null): LeaderReply => ({ ...r, kept: { seq, value } });
    // Proclaim 2 was kept on nodes 0 and 1; node 2 was not told.
    const leader = decideLeader([kept(reading("h1", 900, true, 2, "new"), 2, "new"), kept(reading("h1", 500, true, 2, "new"), 2, "new"),
      kept(reading("h1", 100, true, 1, "old"), 1, "old")], 3);
    assert.deepEqual([leader?.value, leader?.seq], ["new", 2]);
    // Alive while two of three nodes hold it: until the second latest expiry.
    assert.equal(leader?.pttlMs, 500);
    // Proclaim 2 reached node 0 alone (it rejected, so it was never kept): proclaim 1 is named,
    // also by a read that meets node 0.
    const failed = [kept(reading("h1", 900, true, 2, "new"), 1, "old"), kept(reading("h1", 500, true, 1, "old"), 1, "old"), kept(reading("h1", 100, true, 1, "old"), 1, "old")];
    assert.equal(decideLeader(failed, 3)?.value, "old");
    assert.equal(decideLeader([failed[0] ?? null, null, failed[2] ?? null], 3)?.value, "old", "a read that meets the node it reached");
    // Proclaim 2 (no value) was kept on node 0 and another node; this read meets only node 0 of them.
    const later = [kept(reading("h1", 900, true, 2), 2, null), null, kept(reading("h1", 100, true, 1, "one"), 1, "one")];
    assert.deepEqual([decideLeader(later, 3)?.value, decideLeader(later, 3)?.seq], [null, 2]);
    // The first proclaim was stored on one node only: the hold leads on a majority, but nobody is named yet.
    assert.equal(decideLeader([reading("h1", 900, true, 1, "x"), reading("h1", 500, false, 0), reading("h1", 100, false, 0)], 3), null);
    assert.equal(decideLeader([reading("h1", 900, false, 0), reading("h1", 500, false, 0), null], 3), null, "nobody proclaimed");
    assert.equal(decideLeader([kept(reading("h1", 900, true, 1), 1, null), kept(reading("h2", 500, true, 1), 1, null), null], 3), null, "no majority for one hold");
  });

  it("a latch opens once the answers hold `count` distinct count downs, though no majority is at 0", () => {
    const at = (left: number, ids: string[]): LatchReply => ({ status: "unchanged", left, ids });
    const left = (r: LatchReply): number => (r.status === "conflict" ? Number.NaN : r.left);
    // Two count downs acknowledged by different majorities: nodes at 1, 0, 1.
    assert.equal(left(decideLatch(2, [at(1, ["x"]), at(0, ["x", "y"]), at(1, ["y"])])), 0);
    assert.equal(left(decideLatch(2, [at(1, ["x"]), at(1, ["x"])])), 1);
    const conflict: LatchReply = { status: "conflict", count: 5 };
    assert.deepEqual(decideLatch(2, [at(1, ["x"]), conflict]), conflict, "a node with another count answers for all");
  });
});
