/**
 * What a waiter's attempt and ticket refresh cost Redis does not grow with the line it stands in
 * (issue 24: 1,000 multiLock waiters, one keepalive tick refreshes them all). Counted as work, not
 * time: the commands the scripts run (INFO commandstats) for the waiters at the back of a line of
 * 10 and of 400 are the same, and none of them walks a list (LPOS, LRANGE, LREM); a release tells a
 * bounded number of the multiLock waiters it passes over, not the whole line, and walks the line 16
 * tickets per command.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { tombstoneOf, type ExclusiveKeys } from "../../src/keys.js";
import { scripts, ticketState, type ScriptCall } from "../../src/protocol/index.js";
import { scriptBench, type ScriptBench } from "./bench.js";

const WALKS = ["lpos", "lrange", "lrem"];
/** The bench's own commands, and PEXPIRE, which a refresh sends or not by the millisecond (the line's PTTL just under its keep). */
const NOT_COUNTED = new Set(["evalsha", "eval", "script", "info", "config", "config|resetstat", "pexpire"]);

void describe("a line's length and what its waiters cost", () => {
  let b: ScriptBench;
  before(async () => { b = await scriptBench(); });
  after(() => b.close());

  /** The commands `call` makes Redis run, by name (those a script runs included). */
  async function commandsOf(call: ScriptCall<unknown>): Promise<Record<string, number>> {
    await b.redis.config("RESETSTAT");
    await b.run(call);
    const info = await b.redis.info("commandstats");
    const out: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (!NOT_COUNTED.has(m[1] as string)) out[m[1] as string] = Number(m[2]);
    }
    return out;
  }
  const total = (c: Record<string, number>): number => Object.values(c).reduce((a, x) => a + x, 0);

  const LEASE = 30_000;
  const freeing = (keys: readonly ExclusiveKeys[], entry: string): string[] =>
    keys.flatMap((k) => [k.lock, k.queue, k.tickets, k.channel, tombstoneOf(k, entry)]);
  const acquireMulti = (keys: readonly ExclusiveKeys[], hold: string) => scripts.acquireMulti.call({}, {
    owner: hold, hold, entry: hold, ttl: 10_000, join: "", ticketLease: LEASE, keep: 60_000, grant: "1", publish: "PUBLISH",
  }, { keys: freeing(keys, hold) });
  const acquire = (k: ExclusiveKeys, hold: string) => scripts.acquire.call({ lock: k.lock, queue: k.queue, tickets: k.tickets },
    { owner: hold, hold, entry: hold, ttl: 10_000, join: "", ticketLease: LEASE, window: 10_000 });
  const refreshMulti = (keys: readonly ExclusiveKeys[], tickets: readonly string[]) => scripts.keepalive.call({}, {}, {
    keys: tickets.flatMap((t) => keys.flatMap((k) => [k.lock, k.queue, k.tickets, tombstoneOf(k, t)])),
    args: tickets.flatMap((t) => ["m", t, LEASE, 10_000, t, keys.length]),
  });
  const refreshMutex = (k: ExclusiveKeys, tickets: readonly string[]) => scripts.keepalive.call({}, {}, {
    keys: tickets.flatMap((t) => [k.lock, k.queue, k.tickets, tombstoneOf(k, t)]),
    args: tickets.flatMap((t) => ["q", t, LEASE, 10_000, t]),
  });

  /** A held 3-key set and a mutex, each with `n` waiters behind its holder; what the back of each line costs. */
  async function costs(n: number) {
    const set = ["a", "b", "c"].map((x) => b.exclusive(`line${n}:${x}`));
    const mutex = b.exclusive(`line${n}:m`);
    assert.equal((await b.run(acquireMulti(set, "holder"))).status, "founded");
    assert.equal((await b.run(acquire(mutex, "holder"))).status, "founded");
    const waiters = Array.from({ length: n }, (_, i) => `w${i}`);
    for (const w of waiters) {
      await Promise.all([b.run(acquireMulti(set, w)), b.run(acquire(mutex, w))]);
    }
    assert.equal(await b.redis.llen(set[2]!.queue), n);
    assert.equal(await b.redis.llen(mutex.queue), n);
    const back = waiters.slice(-8);
    const replies = await b.run(refreshMulti(set, back));
    assert.ok(replies.map(ticketState).every((r) => r.status === "queued" && r.position > 0), "they wait behind the head");
    return {
      refreshMulti: await commandsOf(refreshMulti(set, back)),
      attemptMulti: await commandsOf(acquireMulti(set, waiters[n - 1]!)),
      refreshMutex: await commandsOf(refreshMutex(mutex, back)),
      attemptMutex: await commandsOf(acquire(mutex, waiters[n - 1]!)),
    };
  }

  void it("a refresh of 8 multiLock waiters (3 keys) or mutex waiters, and a waiter's attempt, run the same commands at the back of a line of 10 and of 400", async () => {
    const short = await costs(10);
    const long = await costs(400);
    for (const what of ["refreshMulti", "attemptMulti", "refreshMutex", "attemptMutex"] as const) {
      assert.deepEqual(long[what], short[what], `${what}: the same commands in a line of 400 as in one of 10`);
      for (const walk of WALKS) assert.equal(long[what][walk] ?? 0, 0, `${what} walks no list (${walk})`);
    }
    // What the keep-alive budget weighs them at (src/store/keepalive-batch.ts): a multiLock waiter
    // three renewals per key, a mutex waiter one; a renewal runs 2 or 3 commands (HMGET, PTTL, PEXPIRE).
    assert.ok(total(short.refreshMulti) / 8 <= 3 * 3 * 4, `a multiLock waiter's refresh: ${total(short.refreshMulti) / 8} commands`);
  });

  void it("a release tells the first 8 multiLock waiters it passes over, not all 30, and reads them 16 per command; the others' refresh finds every lock free and tells them to attempt", async () => {
    const set = ["a", "b", "c"].map((x) => b.exclusive(`told:${x}`));
    assert.equal((await b.run(acquireMulti(set, "holder"))).status, "founded");
    const waiters = Array.from({ length: 30 }, (_, i) => `w${i}`);
    for (const w of waiters) assert.equal((await b.run(acquireMulti(set, w))).status, "busy");
    const release = scripts.releaseMulti.call({}, { hold: "holder", entry: "holder", keep: 60_000, window: 10_000, grant: "1", publish: "PUBLISH" },
      { keys: freeing(set, "holder") });
    const heard = await Promise.all(set.map((k) => b.listen(k.channel)));
    try {
      const commands = await commandsOf(release);
      await b.redis.ping();
      assert.equal(commands.publish, 3 * 8, "8 told per key");
      // It walks each line past the 30 to find a ticket that holds it (there is none), 16 tickets
      // per LRANGE and HMGET, not one LINDEX and HGET per ticket (180 commands for these lines).
      assert.equal((commands.lindex ?? 0) + (commands.hget ?? 0), 0, JSON.stringify(commands));
      assert.ok((commands.lrange ?? 0) + (commands.hmget ?? 0) <= 3 * 9, JSON.stringify(commands));
      for (const h of heard) assert.deepEqual(h.messages, waiters.slice(0, 8).map((w) => `t ${w}`), "the first 8 in line");
    } finally {
      for (const h of heard) h.close();
    }
    assert.deepEqual(ticketState((await b.run(refreshMulti(set, ["w29"])))[0]), { status: "turn" }, "the last one learns at its refresh");
    // Which looks for a ticket holding a line ahead of it, 16 per LRANGE and HMGET: no HGET per ticket.
    const refresh = await commandsOf(refreshMulti(set, ["w29"]));
    assert.ok((refresh.hget ?? 0) <= 10 && (refresh.lrange ?? 0) + (refresh.hmget ?? 0) <= 3 * 4, JSON.stringify(refresh));
  });
});
