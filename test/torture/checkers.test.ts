/**
 * The torture checkers on tiny hand-written histories: each rule, the cases it must let pass,
 * and how a report is classified. No Redis here: checkers are pure functions of a history.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkAnswers } from "./checkers/answers.js";
import { checkHistory } from "./checkers/index.js";
import { checkExclusion, checkPermits } from "./checkers/exclusion.js";
import { checkCalls, checkSweep, checkWorkers } from "./checkers/liveness.js";
import { checkProgress } from "./checkers/progress.js";
import { buildModel } from "./checkers/model.js";
import { checkCounters, checkFencedRegisters } from "./checkers/resources.js";
import type { Violation } from "./checkers/violation.js";
import type { HistoryEvent, LeaseEvent, Prim } from "./history.js";

/** Builders for hand-written histories. */
const h = {
  lease: (t: number, w: number, lease: string, key: string, token: string, owner: string,
    o: { prim?: Prim; parent?: string; late?: boolean; permits?: number; call?: string } = {}): LeaseEvent => ({
    type: "lease", t, w, lease, key, token, owner, prim: o.prim ?? "mutex", call: o.call ?? `${lease}.call`, instance: 0, ttl: 1_000,
    ...(o.parent && { parent: o.parent }), ...(o.late && { late: true }), ...(o.permits && { permits: o.permits }),
  }),
  look: (t: number, w: number, lease: string, held = true, via: "poll" | "end" = "poll"): HistoryEvent =>
    ({ type: "obs", t, w, lease, held, aborted: !held, via }),
  end: (t: number, w: number, lease: string): HistoryEvent => ({ type: "end", t, w, lease }),
  invoke: (t: number, w: number, call: string, op: "release" | "extend" | "acquire" | "withLock" | "guard", boundMs: number | null,
    o: { lease?: string; key?: string; prim?: Prim; args?: Record<string, string | number | boolean> } = {}): HistoryEvent =>
    ({ type: "invoke", t, w, call, op, boundMs, ...o }),
  ok: (t: number, w: number, call: string): HistoryEvent => ({ type: "ok", t, w, call }),
  lost: (t: number, w: number, call: string): HistoryEvent => ({
    type: "fail", t, w, call, error: { name: "LockLostError", code: "ERR_SURELOCK_LOCK_LOST", reason: "expired", message: "lost" },
  }),
  fault: (t: number, fault: "kill-node" | "cut" | "pause-worker" | "latency" | "wakeups" | "late-wakeup", phase: "start" | "end" | "hit", target: string,
    o: { dataLoss?: boolean; detail?: Record<string, string | number | boolean | null> } = {}): HistoryEvent =>
    ({ type: "fault", t, w: -1, fault, phase, target, ...o }),
};

const only = (vs: readonly Violation[], severity = "violation"): Violation[] => vs.filter((v) => v.severity === severity);

describe("believed-hold overlap (lease tier)", () => {
  it("two holds of one mutex believed at the same instant are a violation", () => {
    const vs = checkExclusion(buildModel([
      h.lease(0, 0, "A", "k", "10", "a"), h.look(50, 0, "A"), h.look(120, 0, "A"),
      h.lease(100, 1, "B", "k", "11", "b"), h.look(130, 1, "B"),
    ]));
    assert.equal(only(vs).length, 1);
    assert.equal(vs[0]?.checker, "believed-overlap");
    assert.deepEqual(vs[0]?.window, [100, 120]);
  });

  it("a multiLock's lease holds the mutex of each of its keys, each with that key's token", () => {
    const multi: HistoryEvent = { ...h.lease(0, 0, "M", "a", "10", "o"), keys: ["a", "b"], tokens: ["10", "20"] };
    const vs = checkExclusion(buildModel([
      multi, h.look(200, 0, "M"),
      // A mutex of a joined by the same owner: the same hold on a (the same token), no conflict.
      h.lease(10, 1, "J", "a", "10", "o"), h.look(150, 1, "J"),
      // Another client on b while the multiLock still believes it holds b.
      h.lease(100, 2, "B", "b", "21", "x"), h.look(130, 2, "B"),
    ]));
    assert.equal(only(vs).length, 1);
    assert.equal(vs[0]?.checker, "believed-overlap");
    assert.equal(vs[0]?.lock, "mutex:b");
    assert.deepEqual(vs[0]?.window, [100, 130]);
  });

  it("a hold that stopped believing before the next one came in is fine, however late it released", () => {
    const vs = checkExclusion(buildModel([
      h.lease(0, 0, "A", "k", "10", "a"), h.look(90, 0, "A"), h.look(95, 0, "A", false), h.end(400, 0, "A"),
      h.lease(100, 1, "B", "k", "11", "b"), h.look(130, 1, "B"),
    ]));
    assert.deepEqual(vs, []);
  });

  it("re-entries of one hold (same owner and token) and different keys never conflict", () => {
    const vs = checkExclusion(buildModel([
      h.lease(0, 0, "A", "k", "10", "a"), h.look(200, 0, "A"),
      h.lease(10, 0, "A2", "k", "10", "a", { parent: "A" }), h.look(150, 0, "A2"),
      h.lease(20, 1, "C", "other", "3", "c"), h.look(150, 1, "C"),
    ]));
    assert.deepEqual(vs, []);
  });

  it("one owner believed at once under two tokens is reported as a re-entry with a new token", () => {
    const vs = checkExclusion(buildModel([
      h.lease(0, 0, "A", "k", "10", "a"), h.look(200, 0, "A"),
      h.lease(50, 0, "A2", "k", "99", "a", { parent: "A" }), h.look(150, 0, "A2"),
    ]));
    assert.equal(vs.length, 1);
    assert.equal(vs[0]?.checker, "reentry-token");
    assert.deepEqual(vs[0]?.patterns, ["reentry-new-token"]);
  });

  it("a server that forgot its data while the first hold held it breaks an assumption, not the protocol", () => {
    const base = [
      h.lease(0, 0, "A", "k", "10", "a"), h.look(300, 0, "A"),
      h.lease(200, 1, "B", "k", "11", "b"), h.look(250, 1, "B"),
    ];
    const during = checkExclusion(buildModel([...base,
      h.fault(100, "kill-node", "start", "redis", { dataLoss: true }), h.fault(150, "kill-node", "end", "redis", { dataLoss: true })]));
    assert.equal(during[0]?.severity, "assumption-broken");
    assert.match(during[0]?.assumption ?? "", /without persistence/);
    const before = checkExclusion(buildModel([...base,
      h.fault(-9_000, "kill-node", "start", "redis", { dataLoss: true }), h.fault(-8_900, "kill-node", "end", "redis", { dataLoss: true })]));
    assert.equal(before[0]?.severity, "violation", "a restart well before the first hold began explains nothing");
  });

  it("labels a job that outlived its section, and an extend that raced a watchdog renewal", () => {
    const late = checkExclusion(buildModel([
      h.lease(0, 0, "J", "k", "10", "a", { late: true }), h.look(150, 0, "J"),
      h.lease(100, 1, "B", "k", "11", "b"), h.look(130, 1, "B"),
    ]));
    assert.deepEqual(late[0]?.patterns, ["outlived-section"]);
    const raced = checkExclusion(buildModel([
      h.lease(0, 0, "A", "k", "10", "a"), h.invoke(40, 0, "x", "extend", 100, { lease: "A", args: { ttl: 60_000 } }),
      { type: "renew", t: 55, w: 0, key: "k", token: "10", ttl: 1_000, automatic: true }, h.ok(60, 0, "x"), h.look(1_500, 0, "A"),
      h.lease(1_200, 1, "B", "k", "11", "b"), h.look(1_300, 1, "B"),
    ]));
    assert.deepEqual(raced[0]?.patterns, ["extend-race"]);
  });
});

describe("read-write locks and semaphores", () => {
  it("a reader nested in the writer's own hold is fine; any other reader during a write is not", () => {
    const vs = checkExclusion(buildModel([
      h.lease(0, 0, "W", "d", "5", "w", { prim: "write" }), h.look(300, 0, "W"),
      h.lease(10, 0, "W2", "d", "5", "w", { prim: "write", parent: "W" }), h.look(200, 0, "W2"),
      h.lease(20, 0, "R1", "d", "6", "r1", { prim: "read", parent: "W2" }), h.look(100, 0, "R1"),
      h.lease(50, 1, "R2", "d", "7", "r2", { prim: "read" }), h.look(60, 1, "R2"),
    ]));
    assert.equal(vs.length, 1);
    assert.equal(vs[0]?.checker, "read-write");
    assert.deepEqual(vs[0]?.leases, ["W", "R2"]);
  });

  it("readers share; never more believed permit holders than permits", () => {
    assert.deepEqual(checkExclusion(buildModel([
      h.lease(0, 0, "R1", "d", "1", "a", { prim: "read" }), h.look(100, 0, "R1"),
      h.lease(10, 1, "R2", "d", "2", "b", { prim: "read" }), h.look(100, 1, "R2"),
    ])), []);
    const sem = (n: number): HistoryEvent[] => Array.from({ length: n }, (_, i) => [
      h.lease(i * 10, i, `S${i}`, "s", String(i), `o${i}`, { prim: "sem", permits: 2 }), h.look(100, i, `S${i}`),
    ]).flat();
    assert.deepEqual(checkPermits(buildModel(sem(2))), []);
    const over = checkPermits(buildModel(sem(3)));
    assert.equal(over.length, 1, "one report per episode");
    assert.deepEqual(over[0]?.window, [20, 100]);
  });
});

describe("fenced register and counters (resource tier)", () => {
  const write = (t: number, lease: string, writeId: string, token: string, outcome: "written" | "refused" | "unknown"): HistoryEvent =>
    ({ type: "guard", t, w: 0, lease, resource: "res-k", writeId, token, outcome });

  it("a clean log passes: tokens never go down, each accepted write once, unknown outcomes either way", () => {
    const model = buildModel([write(1, "A", "g1", "5", "written"), write(2, "A", "g2", "5", "unknown"), write(3, "B", "g3", "4", "refused"), write(4, "C", "g4", "9", "written")]);
    assert.deepEqual(checkFencedRegisters(model, new Map([["res-k", ["g1:5", "g4:9"]]])), []);
  });

  it("reports a fence that went backwards, an accepted write that is missing, a refused one that is there, a replayed one", () => {
    const model = buildModel([write(1, "A", "g1", "9", "written"), write(2, "B", "g2", "5", "written"), write(3, "C", "g3", "7", "refused"), write(4, "D", "g4", "10", "written")]);
    const vs = checkFencedRegisters(model, new Map([["res-k", ["g1:9", "g2:5", "g3:7", "g3:7"]]]));
    const messages = vs.map((v) => v.message).join("\n");
    assert.match(messages, /went backwards/);
    assert.match(messages, /g4 .*not in the log/);
    assert.match(messages, /g3 was refused to the client but is in the log/);
    assert.match(messages, /g3 .*2 times/);
    assert.ok(vs.some((v) => v.patterns?.includes("replayed-write")));
  });

  it("two holds that wrote the same counter value lost an update; siblings of one hold do not count", () => {
    const counter = (t: number, lease: string, read: number): HistoryEvent =>
      ({ type: "counter", t, w: 0, lease, key: "c", read, wrote: read + 1, outcome: "ok" });
    const leases = [
      h.lease(0, 0, "A", "k", "1", "a"), h.lease(0, 0, "A2", "k", "1", "a", { parent: "A" }), h.lease(0, 1, "B", "k", "2", "b"),
    ];
    assert.deepEqual(checkCounters(buildModel([...leases, counter(10, "A", 0), counter(11, "A2", 0)]), new Map([["c", 1]])), []);
    const lost = checkCounters(buildModel([...leases, counter(10, "A", 0), counter(11, "B", 0)]), new Map([["c", 1]]));
    assert.equal(only(lost).length, 1);
    const told = checkCounters(buildModel([...leases, h.look(12, 1, "B", false), h.end(13, 1, "B"), counter(10, "A", 0), counter(11, "B", 0)]), new Map([["c", 1]]));
    assert.equal(told[0]?.severity, "acknowledged", "the second holder lost its lease and was told");
    assert.match(checkCounters(buildModel([...leases, counter(10, "A", 4)]), new Map([["c", 2]]))[0]?.message ?? "", /below the acknowledged write/);
  });

  it("after siblings of one hold raced on the counter, a duplicate value by another hold is their race's doing, not the lock's", () => {
    const get = (t: number, call: string, lease: string): HistoryEvent => ({ type: "invoke", t, w: 0, call, op: "counter-get", lease, boundMs: null });
    const counter = (t: number, lease: string, read: number): HistoryEvent =>
      ({ type: "counter", t, w: 0, lease, key: "c", read, wrote: read + 1, outcome: "ok" });
    const leases = [
      h.lease(0, 0, "A", "k", "1", "a"), h.lease(0, 0, "A2", "k", "1", "a", { parent: "A" }), h.lease(50, 1, "B", "k", "2", "b"),
    ];
    // A and A2 (one hold) read 0 together; A writes 1, reads 1, writes 2; A2's late write puts 1
    // back; B then reads 1 and writes 2 again.
    const events = [...leases, get(10, "c1", "A"), get(11, "c2", "A2"), counter(12, "A", 0), get(13, "c3", "A"), counter(14, "A", 1),
      counter(20, "A2", 0), get(60, "c4", "B"), counter(61, "B", 1)];
    const found = checkCounters(buildModel(events), new Map([["c", 2]]));
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, "assumption-broken");
    assert.match(found[0]?.assumption ?? "", /siblings/);
  });

  it("a holder stopped between its look and its write broke an assumption (a write under way cannot be called back)", () => {
    const events: HistoryEvent[] = [
      h.lease(0, 0, "A", "k", "1", "a"), h.lease(0, 1, "B", "k", "2", "b"),
      { type: "obs", t: 5, w: 1, lease: "B", held: true, aborted: false, via: "before-write" },
      h.fault(6, "pause-worker", "start", "worker1"), h.fault(400, "pause-worker", "end", "worker1"),
      { type: "counter", t: 100, w: 0, lease: "A", key: "c", read: 0, wrote: 1, outcome: "ok" },
      { type: "counter", t: 401, w: 1, lease: "B", key: "c", read: 0, wrote: 1, outcome: "ok" },
    ];
    const [v] = checkCounters(buildModel(events), new Map([["c", 1]]));
    assert.equal(v?.severity, "assumption-broken");
    assert.match(v?.assumption ?? "", /worker 1 was stopped/);
  });
});

describe("liveness, hygiene and wrong answers", () => {
  it("a call over its bound is reported; time its worker spent stopped does not count; a call that never settles is reported", () => {
    const events = [
      h.invoke(0, 0, "a", "release", 100), h.ok(150, 0, "a"),
      h.invoke(0, 1, "b", "release", 100), h.ok(150, 1, "b"),
      h.fault(10, "pause-worker", "start", "worker1"), h.fault(90, "pause-worker", "end", "worker1"),
      h.invoke(0, 2, "c", "withLock", null),
      h.invoke(0, 3, "d", "acquire", 100, { key: "k" }), h.lease(50, 3, "L", "k", "1", "o", { call: "d" }), h.ok(50, 3, "d"),
    ];
    const vs = checkCalls(buildModel(events));
    assert.deepEqual(vs.map((v) => v.message.match(/call (\w)/)?.[1]).sort(), ["a", "c"]);
  });

  it("time its worker's event loop ran nothing does not count either, and a stall during a pause counts once", () => {
    const stall = (from: number, to: number, w: number): HistoryEvent => ({ type: "stall", t: to, w, from });
    const events = [
      // 190 ms, of which 100 stalled: within its 100 ms bound.
      h.invoke(0, 4, "s", "release", 100), stall(20, 120, 4), h.ok(190, 4, "s"),
      // 230 ms, stopped from 10 to 90 and stalled from 50 to 120: 110 ms not counted, 120 over.
      h.invoke(0, 5, "e", "release", 100), h.fault(10, "pause-worker", "start", "worker5"), h.fault(90, "pause-worker", "end", "worker5"),
      stall(50, 120, 5), h.ok(230, 5, "e"),
      // Another worker's stall is not this one's.
      h.invoke(0, 6, "f", "release", 100), stall(0, 150, 4), h.ok(150, 6, "f"),
    ];
    const vs = checkCalls(buildModel(events));
    assert.deepEqual(vs.map((v) => v.message.match(/call (\w)/)?.[1]).sort(), ["e", "f"]);
  });

  it("leaked handles, leaked signal listeners, unhandled errors, keys without TTL and orphan tickets are reported", () => {
    const vs = checkWorkers(buildModel([
      { type: "leaks", t: 1, w: 0, handles: { TCPSocketWrap: 1 }, listeners: {} },
      { type: "leaks", t: 1, w: 1, handles: {}, listeners: {} },
      { type: "listener-leak", t: 2, w: 0, call: "x", count: 1 },
      { type: "note", t: 3, w: 0, level: "error", text: "unhandled rejection" },
    ]));
    assert.equal(vs.length, 3);
    const sweep = checkSweep({ drainedAfterMs: null, deadlineMs: 5, stillBusy: ["surelock:{k}:lock"], noTtl: ["surelock:{k}:fence"], orphanTickets: ["t1"] });
    assert.deepEqual(sweep.map((v) => v.checker).sort(), ["hygiene", "hygiene", "liveness"]);
  });

  it("a release told 'lost' right after its holder saw the lease held, with nobody else in, is a wrong answer", () => {
    const base = [
      h.lease(0, 0, "A", "k", "10", "a"), h.look(100, 0, "A", true, "end"),
      h.invoke(100, 0, "r", "release", 1_000, { lease: "A", args: { nth: 1 } }),
      h.fault(101, "cut", "hit", "redis", { detail: { script: "release", key: "surelock:{k}:lock" } }),
      h.lost(160, 0, "r"),
    ];
    const vs = checkAnswers(buildModel(base));
    assert.equal(vs.length, 1);
    assert.deepEqual(vs[0]?.patterns, ["replayed-release"]);
    const takenOver = checkAnswers(buildModel([...base, h.lease(120, 1, "B", "k", "11", "b")]));
    assert.deepEqual(takenOver, [], "someone else got the lock: the answer may be right");
    const delayed = checkAnswers(buildModel([...base, h.fault(50, "latency", "start", "redis"), h.fault(150, "latency", "end", "redis")]));
    assert.deepEqual(delayed, [], "a slow link can let the lease expire under a release in flight");
  });

  it("checkHistory runs every checker over one history and the end state", () => {
    const { violations } = checkHistory([
      h.lease(0, 0, "A", "k", "10", "a"), h.look(120, 0, "A"), h.lease(100, 1, "B", "k", "11", "b"), h.look(130, 1, "B"),
    ], { logs: new Map(), counters: new Map(), sweep: { drainedAfterMs: 3, deadlineMs: 5, stillBusy: [], noTtl: [], orphanTickets: [] } });
    assert.deepEqual(violations.map((v) => v.checker), ["believed-overlap"]);
  });
});

describe("progress (a lock with waiters must change hands)", () => {
  /**
   * Two workers take mutex k in turn, `rounds` times: each holds 20 ms, and the other, waiting
   * all along, gets the lock `gapMs` after the release.
   */
  function turns(rounds: number, gapMs: number): HistoryEvent[] {
    const events: HistoryEvent[] = [];
    let t = 0;
    for (let i = 0; i < rounds; i++) {
      const w = i % 2;
      const lease = `L${i}`;
      const call = `c${i}`;
      // The next worker started waiting when this one got the lock.
      events.push(h.invoke(Math.max(0, t - 20 - gapMs), w, call, "acquire", null, { key: "k", prim: "mutex" }));
      events.push(h.lease(t, w, lease, "k", String(i + 1), `o${w}`, { call }), h.ok(t, w, call));
      events.push(h.end(t + 20, w, lease));
      t += 20 + gapMs;
    }
    return events;
  }

  it("a lock whose waiters get it a few ms after each release passes", () => {
    assert.deepEqual(checkProgress(buildModel(turns(100, 3))), []);
  });

  it("a lock that changes hands every 150 ms of idle time while its waiters are present fails", () => {
    const vs = checkProgress(buildModel(turns(20, 150)));
    assert.equal(vs.length, 1);
    assert.equal(vs[0]?.checker, "liveness");
    assert.match(vs[0]?.message ?? "", /mutex:k: .* 150 ms per holder change, over the floor of 50 ms/);
  });

  it("idle time while something is faulted (and for a ttl after) does not count, nor does too little of it", () => {
    const slow = turns(20, 150);
    const last = 20 * 170;
    assert.deepEqual(checkProgress(buildModel([...slow, h.fault(0, "kill-node", "start", "node1"), h.fault(last, "kill-node", "end", "node1")])), []);
    assert.deepEqual(checkProgress(buildModel(turns(3, 150))), [], "300 ms of idle time in all: not enough to judge");
  });

  it("a multiLock's hold holds each of its keys, and its wait (for all of them at once) judges none", () => {
    // Mutex waiters on b, held 20 s by a multiLock of [a, b]: no idle time on b. A multiLock
    // waiter of [a, c] waits meanwhile with a free: no idle time on a either.
    const multi: HistoryEvent = { ...h.lease(0, 0, "M", "a", "10", "o", { call: "m" }), keys: ["a", "b"], tokens: ["10", "20"] };
    const events: HistoryEvent[] = [
      h.invoke(0, 0, "m", "acquire", null, { key: "a", prim: "mutex", args: { with: "b" } }), multi, h.ok(0, 0, "m"),
      h.invoke(10, 1, "wb", "acquire", null, { key: "b", prim: "mutex" }),
      h.invoke(10, 2, "wa", "acquire", null, { key: "a", prim: "mutex", args: { with: "c" } }),
      h.lease(1, 3, "A0", "a", "5", "x"), h.end(2, 3, "A0"), h.lease(1, 4, "B0", "b", "6", "x"), h.end(2, 4, "B0"),
      h.end(20_000, 0, "M"), h.lease(20_001, 1, "B", "b", "21", "y", { call: "wb" }), h.ok(20_001, 1, "wb"), h.end(20_010, 1, "B"),
    ];
    assert.deepEqual(checkProgress(buildModel(events)), []);
    // Without the multiLock's second key, b looks idle with a waiter for 20 s.
    const plain: HistoryEvent = { ...multi, keys: ["a"], tokens: ["10"] };
    assert.equal(checkProgress(buildModel(events.map((e) => (e === multi ? plain : e)))).length, 1);
  });

  it("idle time while wake-ups were held or lost (and for a ttl after) does not count", () => {
    const slow = turns(40, 150);
    const last = 40 * 170;
    assert.deepEqual(checkProgress(buildModel([...slow, h.fault(0, "wakeups", "start", "redis"), h.fault(last - 900, "wakeups", "end", "redis")])), []);
    assert.deepEqual(checkProgress(buildModel([...slow, h.fault(0, "late-wakeup", "start", "redis"), h.fault(last - 900, "late-wakeup", "end", "redis")])), []);
    assert.equal(checkProgress(buildModel([...slow, h.fault(0, "wakeups", "start", "redis"), h.fault(400, "wakeups", "end", "redis")])).length, 1,
      "long after the fault, slow handoffs count again");
  });

  it("a join by owner whose reply was lost keeps its owner's hold as long as the owner's entries renew it", () => {
    // J (owner o) joined o's hold but its reply never came: Redis may keep its entry. L, of owner
    // o too, extended the hold to 8 s and released at 1,000 ms: the hold may stand until 9,000 ms,
    // and a waiter that gets it at 9,010 ms saw a healthy handoff.
    const events: HistoryEvent[] = [
      h.lease(0, 0, "L", "k", "10", "o"), h.invoke(10, 0, "x", "extend", null, { lease: "L", key: "k", prim: "mutex", args: { ttl: 8_000 } }),
      h.ok(20, 0, "x"),
      h.invoke(30, 2, "j", "acquire", null, { key: "k", prim: "mutex", args: { owner: "o", ttl: 500 } }),
      { type: "fail", t: 1_030, w: 2, call: "j", error: { name: "ConnectionError", code: "ERR_SURELOCK_CONNECTION", message: "no reply within 1000 ms" } },
      h.invoke(500, 1, "w", "acquire", null, { key: "k", prim: "mutex" }), h.end(1_000, 0, "L"),
      h.lease(9_010, 1, "W", "k", "11", "b", { call: "w" }), h.ok(9_010, 1, "w"), h.end(9_050, 1, "W"),
    ];
    assert.deepEqual(checkProgress(buildModel(events)), []);
    // A join that answered left no entry behind: the 8 s after L's release were a stall.
    const answered = events.map((e) => (e.type === "fail" ? h.ok(1_030, 2, "j") : e));
    assert.equal(checkProgress(buildModel(answered)).length, 1);
  });

  it("a lost lease holds its lock for the longest ttl an extend() gave it", () => {
    // L extended to 8 s, then lost at 1,000 ms (its connection stalled): Redis may keep the lock
    // until 9,000 ms, and a waiter that gets it at 9,010 ms saw a healthy handoff.
    const events: HistoryEvent[] = [
      h.lease(0, 0, "L", "k", "10", "a"), h.invoke(10, 0, "x", "extend", null, { lease: "L", key: "k", prim: "mutex", args: { ttl: 8_000 } }),
      h.ok(20, 0, "x"), h.look(900, 0, "L"), h.look(1_000, 0, "L", false),
      h.invoke(500, 1, "w", "acquire", null, { key: "k", prim: "mutex" }),
      h.lease(9_010, 1, "W", "k", "11", "b", { call: "w" }), h.ok(9_010, 1, "w"), h.end(9_050, 1, "W"),
    ];
    assert.deepEqual(checkProgress(buildModel(events)), []);
  });
});
