// A cron job that runs on exactly one of N processes. Every process campaigns in the election
// "cron:<job>"; the leader runs the job once per period (a "slot" of the wall clock) and records
// each run through the fencing guard, with its leadership's token. If the leader dies, another
// process is elected once its lease runs out and carries on with the next slot. If the leader is
// paused (GC, SIGSTOP) past its lease and wakes up just before it writes, its write is refused:
// the newer leader's token is already on the record, so no slot ever runs twice.
//
//   REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/election/cron.ts --job report --every 1000
//
// Start it several times; stop one with Ctrl-C (it resigns, another takes over at once) or kill -9
// (another takes over after --ttl). `redis-cli LRANGE '{cron:report}:runs' 0 -1` lists the runs.
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { Surelock, type Lease } from "surelock";

const { values } = parseArgs({
  options: {
    job: { type: "string", default: "report" },
    every: { type: "string", default: "1000" }, // ms per slot
    ttl: { type: "string", default: "5000" }, // the leader's lease: how long a dead leader blocks the job
  },
});
const job = values.job;
const everyMs = Number(values.every);
const me = `${hostname()}:${process.pid}`;
const say = (line: string): void => { process.stdout.write(`${process.pid} ${line}\n`); };

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const locks = new Surelock({ redis, ttl: Number(values.ttl) });
const election = locks.election(`cron:${job}`);
const guard = locks.guard(`cron:${job}`);
// The record shares the guard's hash tag, so the guarded write works in a Cluster too.
const runs = `{cron:${job}}:runs`;

/** The last slot that ran, from the record (its entries are "<slot> <who>"). */
async function lastSlot(): Promise<number> {
  const last = await redis.lindex(runs, -1);
  return last === null ? -1 : Number(last.split(" ")[0]);
}

/** Runs the job for the current slot unless it ran already, and records the run. */
async function tick(lease: Lease): Promise<void> {
  const slot = Math.floor(Date.now() / everyMs);
  if (slot <= (await lastSlot()) || !lease.held) return;
  // The job itself goes here (build the report, send the mails, ...). Its effect is this record:
  const result = await guard.write(lease.fencingToken, "RPUSH", runs, `${slot} ${me}`);
  if (result.written) say(`ran slot ${slot}`);
  else say(`refused slot ${slot}: a newer leader (token ${result.highestToken}) has written`);
}

/** Resolves at the next slot boundary, or when `signal` aborts. */
function nextSlot(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, everyMs - (Date.now() % everyMs) + 1);
    signal.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

const shutdown = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => shutdown.abort());

while (!shutdown.signal.aborted) {
  let lease: Lease;
  try {
    lease = await election.campaign({ value: me, signal: shutdown.signal });
  } catch (error) {
    if (shutdown.signal.aborted) break;
    throw error;
  }
  say(`leader (fencing token ${lease.fencingToken})`);
  const stop = AbortSignal.any([lease.signal, shutdown.signal]);
  while (!stop.aborted) {
    await tick(lease);
    await nextSlot(stop);
  }
  if (lease.signal.aborted) say("lost the leadership");
  await election.resign().catch(() => {});
}
await locks.close();
await redis.quit();
