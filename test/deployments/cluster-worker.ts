/**
 * One contending process for the Cluster test. It takes every one of `keys` locks once (in its
 * own random order) and, between them, as many sections on the first `hot` keys, which all
 * processes fight over. Each section is a read-modify-write of the key's counter (in the lock's
 * slot) and prints "<key index> <value written> <fencing token>". Prints "started" after the
 * first 20 sections, so the parent can migrate slots while the run is in full swing.
 * argv: startup ports (comma separated), keys, hot, concurrency
 */
import { Cluster } from "ioredis";
import { ConnectionError, Surelock } from "../../src/index.js";

const [ports = "", keyCount = "1000", hotCount = "20", concurrency = "16"] = process.argv.slice(2);
const cluster = new Cluster(ports.split(",").map((port) => ({ host: "127.0.0.1", port: Number(port) })), {
  redisOptions: { maxRetriesPerRequest: 2 },
  slotsRefreshInterval: 1_000,
});
cluster.on("error", () => {});
const locks = new Surelock({ redis: cluster, ttl: 10_000, commandTimeout: 5_000, pollInterval: 500 });

const plan: number[] = [];
const order = Array.from({ length: Number(keyCount) }, (_, i) => i).sort(() => Math.random() - 0.5);
for (const key of order) plan.push(key, Math.floor(Math.random() * Number(hotCount)));

const lines: string[] = [];
let done = 0;
let next = 0;
let retries = 0;

async function section(index: number): Promise<void> {
  for (;;) {
    let entered = false;
    try {
      await locks.withLock(`k${index}`, async (lease) => {
        entered = true;
        const counter = `data:{k${index}}:count`;
        const value = Number(await cluster.get(counter)) + 1;
        await new Promise((resolve) => setImmediate(resolve)); // let the others interleave
        await cluster.set(counter, value);
        lines.push(`${index} ${value} ${lease.fencingToken}`);
      });
      if (++done === 20) process.stdout.write("started\n");
      return;
    } catch (error) {
      // An acquire that did not get through (a slot mid-migration, TRYAGAIN for too long) is
      // safe to repeat; anything inside the section is not, and fails the run.
      if (entered || !(error instanceof ConnectionError)) throw error;
      retries++;
    }
  }
}

await Promise.all(Array.from({ length: Number(concurrency) }, async () => {
  while (next < plan.length) await section(plan[next++] as number);
}));
process.stdout.write(`${lines.join("\n")}\nretries ${retries}\ndone\n`);
await locks.close();
await cluster.quit();
