// A batch split over worker processes, and a coordinator that goes on once every part is done:
// the coordinator waits on a countdown latch of one count per part, and each worker counts down
// when its part is written. A worker that retries after an error passes the same id (its part's
// name), so a count down that did land the first time is not counted twice.
//
//   REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/latch/batch.ts --parts 4
//
// The coordinator starts the workers itself (as child processes of this same file) to keep the
// example in one file; in real life they are other machines that know the batch's name.
import { fork } from "node:child_process";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { Surelock } from "surelock";

const { values } = parseArgs({
  options: {
    parts: { type: "string", default: "4" },
    batch: { type: "string", default: `batch-${Date.now()}` },
    worker: { type: "string" }, // set for a worker: the part it works on
  },
});
const parts = Number(values.parts);
const batch = values.batch;
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const locks = new Surelock({ redis });
// Every process of the batch names the latch and its count alike; the latch outlives a slow
// batch by its ttl (1 h by default), renewed by every count down.
const done = locks.latch(`${batch}:parts`, { count: parts });

if (values.worker !== undefined) {
  const part = values.worker;
  await redis.hset(`{${batch}}:results`, part, `part ${part} by ${process.pid}`);
  const left = await done.countDown({ id: `part-${part}` });
  process.stdout.write(`worker ${part}: done, ${left} part(s) left\n`);
} else {
  const started = performance.now();
  const workers = Array.from({ length: parts }, (_, part) =>
    fork(new URL(import.meta.url).pathname, ["--batch", batch, "--parts", String(parts), "--worker", String(part)], {
      execArgv: ["--import", "tsx"],
    }));
  const exited = workers.map((w) => new Promise((resolve) => w.on("exit", resolve)));
  await done.wait({ timeout: 60_000 });
  const results = await redis.hgetall(`{${batch}}:results`);
  process.stdout.write(`coordinator: all ${parts} parts done after ${Math.round(performance.now() - started)} ms: ${Object.keys(results).length} results\n`);
  await redis.del(`{${batch}}:results`);
  await Promise.all(exited);
}
await locks.close();
await redis.quit();
