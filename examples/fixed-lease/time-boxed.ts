// A time-boxed batch job: each run works through a queue of items for at most --budget ms, on
// one process at a time, under a fixed lease (`leaseTime`): nobody renews it, its signal aborts
// when the budget is spent, and the job stops where it is. A run that dies holding the lock keeps
// the others out for the budget at most. Progress is a cursor written through the fencing guard,
// so a run that was paused past its lease cannot move the cursor back.
//
//   REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/fixed-lease/time-boxed.ts --budget 2000
//
// Run it again (or from cron) and it goes on from the cursor; `--timeout 0` skips a run when
// another one is at work.
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { LockTimeoutError, Surelock } from "surelock";

const { values } = parseArgs({
  options: {
    job: { type: "string", default: "reindex" },
    budget: { type: "string", default: "2000" }, // ms per run: the fixed lease
    items: { type: "string", default: "50" }, // the queue's length
    step: { type: "string", default: "100" }, // ms of work per item
    timeout: { type: "string" }, // longest wait for another run to finish; default: its budget
  },
});
const budgetMs = Number(values.budget);
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const locks = new Surelock({ redis });
const guard = locks.guard(`job:${values.job}`);
const cursorKey = `{job:${values.job}}:cursor`;

try {
  const lease = await locks.mutex(`job:${values.job}`).acquire({
    leaseTime: budgetMs,
    timeout: values.timeout === undefined ? budgetMs : Number(values.timeout),
  });
  let cursor = Number((await redis.get(cursorKey)) ?? 0);
  const from = cursor;
  try {
    while (cursor < Number(values.items)) {
      // The item's work, stopped by the lease's end (an AbortError) like any I/O given the signal.
      await sleep(Number(values.step), undefined, { signal: lease.signal });
      const moved = await guard.write(lease.fencingToken, "SET", cursorKey, String(cursor + 1));
      if (!moved.written) break; // a newer run has the job: this one was paused past its lease
      cursor++;
    }
    process.stdout.write(`done: items ${from} to ${cursor} of ${values.items}\n`);
  } catch (error) {
    if (!lease.signal.aborted) throw error;
    process.stdout.write(`stopped at the end of its ${budgetMs} ms lease: items ${from} to ${cursor}; the next run goes on from ${cursor}\n`);
  }
  await lease.release().catch(() => {}); // a lease that ran out has nothing left to give back
} catch (error) {
  if (!(error instanceof LockTimeoutError)) throw error;
  process.stdout.write("busy: another run is at work\n");
}
await locks.close();
await redis.quit();
