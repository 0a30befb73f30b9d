/**
 * Elections and latches on MemoryRedis, where the races are cheap to set up: a replayed or lost
 * count down, a lost announcement, a resign that crosses a grant, an observer whose subscriber
 * reconnected, and a leader that stops renewing, on a virtual clock.
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import { describe, it } from "node:test";
import { ConnectionError, Surelock, type LatchMessage } from "../../src/index.js";
import { scripts } from "../../src/protocol/index.js";
import { Gate, MemoryRedis, VirtualClock } from "../../src/testing/index.js";
import { quietFor, startsWaiting, within } from "../helpers/fixtures.js";
import { Observed } from "../election/support.js";

describe("elections and latches on MemoryRedis", () => {
  it("a count down sent twice (its reply lost, the client resent it) counts once", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    const latch = locks.latch("replayed", { count: 3 });
    redis.intercept((call) => (call.sha === scripts.countDown.sha ? { kind: "replay" } : undefined));
    assert.equal(await latch.countDown(), 2);
    redis.intercept(undefined);
    assert.equal(await latch.count(), 2);
    await locks.close();
  });

  it("a count down whose reply was lost rejects with ConnectionError; made again with its id, it counts once", async () => {
    const redis = new MemoryRedis();
    const locks = new Surelock({ redis });
    const latch = locks.latch("lost-reply", { count: 2 });
    await locks.latch("warm-up", { count: 1 }).countDown(); // the script is in the server's cache now
    let dropped = false;
    redis.intercept((call) => {
      if (call.sha !== scripts.countDown.sha || dropped) return undefined;
      dropped = true;
      return { kind: "drop-reply", then: "reset" };
    });
    await assert.rejects(latch.countDown({ id: "job-7" }), ConnectionError);
    assert.equal(await latch.count(), 1, "it did count");
    assert.equal(await latch.countDown({ id: "job-7" }), 1, "made again: not counted twice");
    assert.equal(await latch.countDown({ id: "job-8" }), 0);
    await locks.close();
  });

  it("the announcement that opened the latch is lost: the wait opens at its next look (pollInterval)", async () => {
    const redis = new MemoryRedis();
    const waiter = redis.duplicate();
    const a = new Surelock({ redis });
    const b = new Surelock({ redis: waiter, pollInterval: 50 });
    const listening = latchEvent("quiet", "waiting");
    const waiting = b.latch("quiet", { count: 1 }).wait({ timeout: 5_000 });
    await listening;
    waiter.loseNextMessage((_channel, message) => message === "0");
    assert.equal(await a.latch("quiet", { count: 1 }).countDown(), 0);
    await within(2_000, waiting, "the wait, by its poll");
    await Promise.all([a.close(), b.close()]);
  });

  it("resign() while the granted candidate's value is on its way: it steps down, and the next candidate leads", async () => {
    const redis = new MemoryRedis();
    const [ra, rb, rc] = [redis, redis.duplicate(), redis.duplicate()];
    const [a, b, c] = [ra, rb, rc].map((r) => new Surelock({ redis: r }));
    const [ea, eb, ec] = [a!, b!, c!].map((l) => l.election("race"));
    await ea!.campaign({ value: "a" });
    const bWaits = startsWaiting("race");
    const pb = eb!.campaign({ value: "b" });
    await bWaits;
    const cWaits = startsWaiting("race");
    const pc = ec!.campaign({ value: "c" });
    await cWaits;
    const gate = new Gate();
    rb.intercept((call) => (call.sha === scripts.proclaim.sha ? { kind: "gate", gate, stage: "execution" } : undefined));
    await ea!.resign(); // grants the lock to b, the head of the line
    await gate.reached; // b holds the lock; its proclaim waits at the gate
    const resigned = eb!.resign();
    gate.open();
    await resigned;
    await assert.rejects(pb, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    const lc = await within(2_000, pc, "c's campaign");
    assert.deepEqual(await ea!.leader().then((l) => [l?.owner, l?.value]), [lc.owner, "c"]);
    await ec!.resign();
    await Promise.all([a!.close(), b!.close(), c!.close()]);
  });

  it("an observer whose subscriber dropped misses the announcement, and reads again when it is back", async () => {
    const redis = new MemoryRedis();
    const watching = redis.duplicate();
    const leader = new Surelock({ redis });
    const watcher = new Surelock({ redis: watching });
    const seen = new Observed(watcher.election("flaky"));
    await seen.next((l) => l === null);
    const back = new Gate();
    watching.dropSubscribers(back);
    const lease = await leader.election("flaky").campaign({ value: "v" });
    await quietFor(50);
    assert.deepEqual(seen.log, ["none"], "the announcement went unheard");
    back.open();
    const read = await seen.next((l) => l !== null);
    assert.equal(read?.fencingToken, lease.fencingToken);
    await seen.stop();
    await Promise.all([leader.close(), watcher.close()]);
  });

  it("a leader that stops renewing (its connection fails): observers see none at the moment its lease ends in Redis (virtual clock)", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock });
    const leaderRedis = redis.duplicate();
    const leader = new Surelock({ redis: leaderRedis, clock, ttl: 1_000 });
    const watcher = new Surelock({ redis, clock });
    const seen = new Observed(watcher.election("silent"));
    await clock.settle();
    const campaign = leader.election("silent").campaign({ value: "v" });
    await clock.settle();
    const lease = await campaign;
    await clock.settle();
    assert.equal(seen.seen.at(-1)?.fencingToken, lease.fencingToken);
    leaderRedis.intercept(() => ({ kind: "fail" }));
    const electedAt = clock.now();
    // Just before its lease ends in Redis, the observer still shows it; at its end, none.
    await clock.advance(990);
    assert.equal(seen.seen.at(-1)?.fencingToken, lease.fencingToken);
    await clock.advance(20);
    await clock.settle();
    assert.equal(seen.seen.at(-1), null, `none at ${clock.now() - electedAt} ms`);
    assert.equal(lease.held, false);
    leaderRedis.intercept(undefined);
    await seen.stop();
    await Promise.all([leader.close(), watcher.close()]);
  });
});

/** Resolves at the next `surelock:latch` event of `key` and kind `event`; rejects after 5 s. */
function latchEvent(key: string, event: LatchMessage["event"]): Promise<void> {
  let listener: ((m: unknown) => void) | undefined;
  const seen = new Promise<void>((resolve) => {
    listener = (m) => { if ((m as LatchMessage).key === key && (m as LatchMessage).event === event) resolve(); };
    diagnostics.subscribe("surelock:latch", listener);
  });
  return within(5_000, seen, `a ${event} event of latch ${key}`).finally(() => diagnostics.unsubscribe("surelock:latch", listener!));
}
