// The six ways the shop guards its stock counter. Each strategy is the whole of its locking code:
//
//   acquire(ctx)              -> a hold, or null when the wait for the lock timed out
//   write(ctx, hold, units)   -> { written: true, overwrote } or { written: false } (refused)
//   release(ctx, hold)
//
// ctx.gate(point) is a no-op unless the demo runs with faults and the orchestrator armed that point
// in this instance: then the instance reports "I am at <point>" and waits for the orchestrator's
// go-ahead, so a SIGSTOP or SIGKILL lands exactly there. The faults themselves are real signals.
// ctx.writing() marks the moment a write is sent; ctx.letGo() the moment the holder lets go of
// the lock. Both only observe (for the table and the timeline); neither changes what happens.
//
// Writes of the stock counter are `SET units <n> GET`: a plain SET that also answers the value it
// replaced, so the demo can tell a write that landed on a value its writer never read (a stale
// write) and how many sales it wiped off the counter.
//
// fault: what the orchestrator does to the first instance that reaches `at` once it is armed, and
// (`next`) where it then holds the next holder of the lock, in another instance, until the
// victim's late step has landed, so that step lands at the same protocol point in every run.
// `where` says where `at` is, in words, when the point's name alone would not.
// lock: false for the strategy that takes no lock at all.
//
// Every naive strategy gets exactly one thing wrong; the rest of it is the correct idiom, so the
// table shows what that one mistake costs.

import { LockTimeoutError } from "../../dist/index.js";

/** Waits for a naive lock: try, sleep a little, try again, until the deadline. */
async function spin(ctx, tryOnce) {
  const deadline = performance.now() + ctx.acquireTimeoutMs;
  while (performance.now() < deadline) {
    if (await tryOnce()) return {};
    await ctx.spinPause();
  }
  return null;
}

/** The correct naive acquire: SET NX PX, value and TTL in one command. */
const setNxPx = (ctx) => spin(ctx, async () => (await ctx.redis.set(ctx.keys.lock, ctx.owner, "PX", ctx.ttlMs, "NX")) === "OK");

/** The correct naive release: compare and delete in one atomic script. */
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
async function compareAndDelete(ctx) {
  ctx.letGo();
  await ctx.redis.eval(COMPARE_AND_DELETE, 1, ctx.keys.lock, ctx.owner);
}

/** The plain write of the new stock level. */
async function plainWrite(ctx, _hold, units) {
  await ctx.gate("before-write");
  ctx.writing();
  return { written: true, overwrote: await ctx.redis.set(ctx.keys.units, String(units), "GET") };
}

/** surelock's mutex; a timeout becomes null like the naive locks' timeouts. */
async function surelockAcquire(ctx) {
  try {
    return { lease: await ctx.mutex.acquire({ timeout: ctx.acquireTimeoutMs }) };
  } catch (error) {
    if (error instanceof LockTimeoutError) return null;
    throw error;
  }
}

async function surelockRelease(ctx, hold) {
  ctx.letGo();
  await hold.lease.release(); // rejects with LockLostError when the lease was lost meanwhile
}

export const STRATEGIES = {
  none: {
    summary: "no lock: read, think, write",
    lock: false,
    fault: { kind: "pause", at: "before-write" },
    acquire: async () => ({}),
    write: plainWrite,
    release: async () => {},
  },

  "setnx-then-expire": {
    summary: "SETNX, then EXPIRE as a second command",
    fault: { kind: "kill", at: "between-setnx-and-expire" },
    acquire: (ctx) => spin(ctx, async () => {
      if ((await ctx.redis.setnx(ctx.keys.lock, ctx.owner)) === 0) return false;
      await ctx.gate("between-setnx-and-expire"); // a crash here leaves a lock that never expires
      await ctx.redis.pexpire(ctx.keys.lock, ctx.ttlMs); // EXPIRE in ms, for the demo's short TTL
      return true;
    }),
    write: plainWrite,
    release: compareAndDelete,
  },

  "del-without-check": {
    summary: "release with DEL, whoever holds the lock now",
    fault: { kind: "pause", at: "before-release", next: "before-write" },
    acquire: setNxPx,
    write: plainWrite,
    async release(ctx) {
      await ctx.gate("before-release"); // a slow holder: its lock expired, someone else has it now
      ctx.letGo();
      await ctx.redis.del(ctx.keys.lock);
    },
  },

  "get-then-del": {
    summary: "release with GET, compare, DEL: two steps",
    fault: { kind: "pause", at: "between-get-and-del", next: "before-write" },
    acquire: setNxPx,
    write: plainWrite,
    async release(ctx) {
      const value = await ctx.redis.get(ctx.keys.lock);
      if (value !== ctx.owner) return ctx.letGo();
      await ctx.gate("between-get-and-del"); // the lock can expire and change hands right here
      ctx.letGo();
      await ctx.redis.del(ctx.keys.lock);
    },
  },

  surelock: {
    summary: "surelock mutex, plain writes after a lease check",
    fault: { kind: "pause", at: "before-write", where: "after its lease check, before its SET", next: "before-read" },
    acquire: surelockAcquire,
    async write(ctx, hold, units) {
      if (!hold.lease.held) return { written: false }; // the best a lock alone can do: check, then write...
      return plainWrite(ctx, hold, units); // ...and a pause can land between the check and the write
    },
    release: surelockRelease,
  },

  "surelock+fencing": {
    summary: "surelock mutex, writes through the fencing guard",
    fault: { kind: "pause", at: "before-write", where: "before its guarded SET", next: "before-read" },
    async acquire(ctx) {
      const hold = await surelockAcquire(ctx);
      if (hold === null) return null;
      // Raise the fence before reading, so an older holder that wakes up between our read and
      // our write cannot write over the value we read.
      const claim = await ctx.guard.write(hold.lease.fencingToken, "SET", ctx.keys.claim, ctx.owner, "PX", 60_000);
      return { ...hold, stale: !claim.written };
    },
    async write(ctx, hold, units) {
      await ctx.gate("before-write");
      ctx.writing();
      const result = await ctx.guard.write(hold.lease.fencingToken, "SET", ctx.keys.units, String(units), "GET");
      // Not written: a newer holder has raised the fence, this holder's view is stale.
      return result.written ? { written: true, overwrote: result.reply } : { written: false };
    },
    release: surelockRelease,
  },
};

export const STRATEGY_NAMES = Object.keys(STRATEGIES);

/** Redis keys of one run. They share the hash tag {stock}, as the fencing guard needs in a Cluster. */
export function keysFor(ns) {
  return {
    units: `${ns}:{stock}:units`,
    orders: `${ns}:{stock}:orders`,
    claim: `${ns}:{stock}:claim`,
    lock: `${ns}:{stock}:naive-lock`,
  };
}

/** The shop's data: the stock counter and the order log. Every other key of a run belongs to a lock. */
export const dataKeys = (ns) => [keysFor(ns).units, keysFor(ns).orders];
