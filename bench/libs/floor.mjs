// The floor: the least a Redis lock can do on the same kind of ioredis client. Acquire is one
// SET key token NX PX; release is one EVALSHA of a compare-and-delete (GET == token, then DEL),
// so it never frees someone else's lock. Contended, a refused SET is retried after a fixed
// RETRY_DELAY_MS (no jitter, no queue, no wake-up: whoever asks first after the release wins).
// Over several nodes (W4) it is a bare Redlock: SET NX PX on all in parallel, held as soon as a
// majority said OK, otherwise compare-and-delete everywhere and try again; release returns as
// soon as a majority deleted.
// No renewal, no validity check, no fencing: not a lock to use, the line to measure against.
import { randomBytes } from "node:crypto";
import { TTL_MS, connect, disconnect } from "./common.mjs";
import { sleep } from "../lib/clock.mjs";

/** Wait between two refused SETs (setTimeout: at least 1 ms, about 1.1 ms in practice). */
export const RETRY_DELAY_MS = 1;

const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

export const variants = [{ variant: "default", label: "floor: SET NX PX + compare-and-delete" }];

export function create() {
  let clients = [];
  let sha;
  // Unique per acquisition, without paying for randomness on every call.
  const prefix = randomBytes(6).toString("hex");
  let counter = 0;

  const setOn = async (client, key, token, ttlMs) => (await client.set(key, token, "PX", ttlMs, "NX")) === "OK";
  const deleteOn = (client, key, token) => client.evalsha(sha, 1, key, token);

  /**
   * Resolves as soon as a majority of `calls` resolved `true` (true), or as soon as that can no
   * longer happen (false); the other calls still complete. A rejection counts as false.
   */
  function majority(calls) {
    const need = Math.floor(calls.length / 2) + 1;
    return new Promise((resolve) => {
      let yes = 0;
      let no = 0;
      for (const call of calls) {
        call.then((v) => v, () => false).then((v) => {
          if (v) yes++;
          else no++;
          if (yes === need) resolve(true);
          if (no === calls.length - need + 1) resolve(false);
        });
      }
    });
  }

  async function attempt(key, token, ttlMs) {
    if (clients.length === 1) return setOn(clients[0], key, token, ttlMs);
    // Held as soon as a majority said OK, as Redlock implementations do.
    if (await majority(clients.map((c) => setOn(c, key, token, ttlMs)))) return true;
    // Lost: give back whatever it got (a compare-and-delete where it got nothing does nothing).
    await Promise.all(clients.map((c) => deleteOn(c, key, token).catch(() => 0)));
    return false;
  }

  return {
    name: variants[0].label,
    async setup(ports) {
      clients = await connect(ports);
      [sha] = await Promise.all(clients.map((c) => c.script("LOAD", COMPARE_AND_DELETE)));
    },
    async lock(key, ttlMs = TTL_MS) {
      const token = `${prefix}:${++counter}`;
      while (!(await attempt(key, token, ttlMs))) await sleep(RETRY_DELAY_MS);
      return clients.length === 1
        ? () => deleteOn(clients[0], key, token)
        : () => majority(clients.map((c) => deleteOn(c, key, token).then((n) => n === 1)));
    },
    hold: undefined,
    async teardown() {
      await disconnect(clients);
    },
  };
}
