import { Redis } from "ioredis";
import { randomBytes } from "node:crypto";
import { Surelock } from "./src/index.js";
const redis = new Redis({ port: 7703 });
const locks = new Surelock({ redis });
const sha = await redis.script("LOAD", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0") as string;
async function floorCycle(key: string) { const t = randomBytes(8).toString("hex"); await redis.set(key, t, "PX", 30000, "NX"); await redis.evalsha(sha, 1, key, t); }
async function sureCycle(key: string) { await (await locks.mutex(key).acquire()).release(); }
async function rate(fn: (k: string) => Promise<void>, loops: number, ms: number) {
  let n = 0; const end = performance.now() + ms;
  await Promise.all(Array.from({ length: loops }, async (_, i) => { while (performance.now() < end) { await fn(`k${i}`); n++; } }));
  return Math.round(n / ms * 1000);
}
for (const loops of [1, 50]) {
  for (let r = 0; r < 3; r++) {
    const f = await rate(floorCycle, loops, 1000); const s = await rate(sureCycle, loops, 1000);
    console.log(`loops ${loops}: floor ${f}/s surelock ${s}/s ratio ${(s / f).toFixed(2)}`);
  }
}
await locks.close(); redis.disconnect();
