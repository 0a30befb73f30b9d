/**
 * Overlapping multiLocks and mutexes on a virtual clock, seeded: five processes take random sets
 * of five keys in random orders while the network replays script calls and loses pure ticket
 * refreshes (so tickets lapse and stand again). At every step of virtual time no key has two
 * believed holders, and every section ends: no deadlock, whatever the sets, orders and faults.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { Fault } from "../../src/testing/index.js";
import { World, items, type Sent } from "./support.js";

/** A small seeded PRNG (mulberry32): the same run on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ["k0", "k1", "k2", "k3", "k4"];

describe("fast: multiLock, random overlapping sets under faults", () => {
  let w: World;
  beforeEach(async () => { w = await World.create(); });
  afterEach(async () => { await w.close(); });

  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: never two holders of a key, and every section ends`, async () => {
      const rand = random(seed);
      const holders = new Map<string, number>();
      let sections = 0;
      let lapsedRefreshes = 0;
      // Replay one script call in ten; lose 70 % of the keepalive calls that only refresh tickets.
      const fault = (call: Sent): Fault | undefined => {
        if (call.script === "keepalive" && items(call).every((i) => i.kind === "m" || i.kind === "q") && rand() < 0.7) {
          lapsedRefreshes++;
          return { kind: "fail" };
        }
        if (call.script !== undefined && call.script !== "keepalive" && rand() < 0.1) return { kind: "replay" };
        return undefined;
      };
      const runs = Array.from({ length: 5 }, (_, p) => {
        const proc = w.proc({ ttl: 300, pollInterval: 100 });
        proc.wire.fault = fault;
        return w.track((async () => {
          for (let i = 0; i < 12; i++) {
            const keys = [...KEYS].sort(() => rand() - 0.5).slice(0, 1 + Math.floor(rand() * 3));
            const lock = keys.length === 1 ? proc.locks.mutex(keys[0] as string) : proc.locks.multiLock(keys);
            const holdMs = 10 + Math.floor(rand() * 150);
            await lock.withLock(async (lease) => {
              for (const k of keys) holders.set(k, (holders.get(k) ?? 0) + 1);
              assert.equal(lease.fencingTokens.size, keys.length);
              await new Promise<void>((resolve) => w.clock.setTimeout(resolve, holdMs));
              for (const k of keys) holders.set(k, (holders.get(k) ?? 0) - 1);
              sections++;
            });
          }
          return p;
        })());
      });
      await w.stepTo(120_000, (now) => {
        for (const [k, n] of holders) assert.ok(n <= 1, `${k} has ${n} holders at ${now}`);
        if (runs.every((r) => r.settled)) throw new Done();
      }, 5).catch((error: unknown) => { if (!(error instanceof Done)) throw error; });
      for (const r of runs) assert.ok(r.settled && r.ok, `a worker ended with ${String(r.error)}`);
      assert.equal(sections, 60);
      assert.ok(lapsedRefreshes > 0, "some ticket refreshes were lost");
      console.log(`# seed ${seed}: ${lapsedRefreshes} ticket refreshes lost, done at ${w.now} ms`);
    });
  }
});

/** Ends the stepping once every worker is done. */
class Done extends Error {}
