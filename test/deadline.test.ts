// Bounding promises: the deadline queue that bounds every script call of an endpoint, the
// cheap stop that races calls against close() alone, and the one close (Shutdown).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { boundedBy, DeadlineQueue, pause, Shutdown } from "../src/deadline.js";
import { ClosedError } from "../src/errors.js";
import { VirtualClock } from "../src/testing/index.js";
import { closedOnly } from "../src/waiting/stop.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Resolves once `ref`'s target was collected (a few full GCs, each after a macrotask). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return ref.deref() === undefined;
}

describe("DeadlineQueue", () => {
  it("expires the calls that did not settle in time, in the order they were made", async () => {
    const clock = new VirtualClock();
    const queue = new DeadlineQueue(clock, 100);
    const expired: string[] = [];
    queue.add(() => expired.push("a"));
    const b = queue.add(() => expired.push("b"));
    await clock.advance(50);
    queue.add(() => expired.push("c"));
    b.cancel();
    await clock.advance(50);
    assert.deepEqual(expired, ["a"]);
    await clock.advance(50);
    assert.deepEqual(expired, ["a", "c"]);
  });

  it("lets go of a settled call's closure even while an older call is still pending", async () => {
    const clock = new VirtualClock();
    const queue = new DeadlineQueue(clock, 60_000);
    queue.add(() => {}); // a slow call at the head of the line, for the whole test
    let ref: WeakRef<object> | undefined;
    (() => {
      const promiseChain = { big: new Array(1000).fill(0) };
      ref = new WeakRef(promiseChain);
      const handle = queue.add(() => void promiseChain.big.length);
      handle.cancel();
    })();
    assert.ok(ref);
    assert.equal(await collected(ref), true, "the cancelled call's closure is still reachable from the queue");
  });

  it("keeps the line short while calls are always in flight (never empty, settling in order)", async () => {
    const clock = new VirtualClock();
    const queue = new DeadlineQueue(clock, 60_000);
    const inFlight: { cancel(): void }[] = [];
    let ref: WeakRef<object> | undefined;
    // Fewer calls than the old line's 1,024 settled slots before it compacted itself.
    for (let i = 0; i < 1_000; i++) {
      const closure = { i };
      if (i === 10) ref = new WeakRef(closure);
      inFlight.push(queue.add(() => void closure.i));
      if (inFlight.length > 50) inFlight.shift()?.cancel();
    }
    assert.ok(ref);
    assert.equal(await collected(ref), true, "an early settled call is still reachable from the queue");
  });
});

describe("closedOnly (a call with no stop of its own)", () => {
  it("settles as the call does, and rejects every call in flight at close()", async () => {
    const closer = new AbortController();
    const stop = closedOnly(closer.signal);
    assert.equal(closedOnly(closer.signal), stop, "one stop per closed signal");
    assert.equal(await stop.race(Promise.resolve(7)), 7);
    await assert.rejects(stop.race(Promise.reject(new Error("refused"))), /refused/);

    let answer: (value: number) => void = () => {};
    const late: number[] = [];
    const pending = stop.race(new Promise<number>((resolve) => { answer = resolve; }), (value) => late.push(value));
    closer.abort(new Error("closed"));
    await assert.rejects(pending, /closed/);
    answer(9);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(late, [9], "a value that came after close() goes to `late`");
    await assert.rejects(stop.race(Promise.resolve(1)), /closed/);
    assert.throws(() => stop.throwIfInterrupted(), /closed/);
  });
});

/** Settles `p` and reports which of its outcomes came by now (after the microtasks ran). */
async function state(p: Promise<unknown>): Promise<string> {
  let outcome = "pending";
  p.then((v) => { outcome = `resolved ${String(v)}`; }, (e: unknown) => { outcome = `rejected ${String(e)}`; });
  await new Promise((resolve) => setImmediate(resolve));
  return outcome;
}

describe("pause and boundedBy (the waits on the runtime's clock)", () => {
  it("pause ends at its time, at its signal, or at its wake-up, whichever comes first, and leaves no timer", async () => {
    const clock = new VirtualClock();
    const timed = pause(clock, 100);
    await clock.advance(99);
    assert.equal(await state(timed), "pending");
    await clock.advance(1);
    assert.equal(await state(timed), "resolved undefined");

    const stop = new AbortController();
    const stopped = pause(clock, 100, stop.signal);
    stop.abort();
    assert.equal(await state(stopped), "resolved undefined");
    assert.equal(await state(pause(clock, 100, stop.signal)), "resolved undefined", "an aborted signal ends it at once");

    let wake: (() => void) | undefined;
    const woken = pause(clock, Infinity, undefined, (w) => { wake = w; });
    assert.equal(await state(woken), "pending", "Infinity: no time limit");
    wake?.();
    assert.equal(await state(woken), "resolved undefined");
    assert.equal(clock.pendingTimers, 0, "every timer cleared");
  });

  it("boundedBy settles as its work does, or with undefined after its time", async () => {
    const clock = new VirtualClock();
    assert.equal(await boundedBy(clock, 100, Promise.resolve(7)), 7);
    await assert.rejects(boundedBy(clock, 100, Promise.reject(new Error("no"))), /no/);
    const slow = boundedBy(clock, 100, new Promise<number>(() => {}));
    await clock.advance(100);
    assert.equal(await slow, undefined);
    assert.equal(clock.pendingTimers, 0, "every timer cleared");
  });
});

describe("Shutdown: one close", () => {
  it("open → closing → closed: the signal aborts and new work is refused from the first close(), which a second one joins", async () => {
    const shutdown = new Shutdown();
    assert.equal(shutdown.state, "open");
    shutdown.assertOpen();
    let runs = 0;
    let finish!: () => void;
    const steps = (): Promise<void> => { runs++; return new Promise((resolve) => { finish = resolve; }); };
    const first = shutdown.close(steps);
    assert.equal(shutdown.state, "closing");
    assert.ok(shutdown.signal.reason instanceof ClosedError);
    assert.throws(() => shutdown.assertOpen(), ClosedError);
    assert.equal(shutdown.close(steps), first, "a second close() is the first one");
    assert.equal(runs, 1);
    finish();
    await first;
    assert.equal(shutdown.state, "closed");
    assert.equal(shutdown.close(steps), first);
    assert.equal(runs, 1);
  });

  it("drained settles once the work begun before it ended (at once when there is none)", async () => {
    const shutdown = new Shutdown();
    assert.equal(await state(shutdown.drained), "resolved undefined");
    shutdown.begin();
    shutdown.begin();
    const drained = shutdown.drained;
    shutdown.end();
    assert.equal(await state(drained), "pending");
    shutdown.end();
    assert.equal(await state(drained), "resolved undefined");
  });
});
