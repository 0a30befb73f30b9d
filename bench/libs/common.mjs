// What every adapter shares: ioredis connections to the bench's servers.
//
// An adapter is { name, setup(ports), lock(key, ttlMs?) -> release(), hold?(key, ttlMs), teardown() }:
// setup gets one port (single node) or several (quorum mode); lock waits until the lock is held
// and resolves with a function that releases it; hold (optional, W5) takes a lease that the
// library keeps renewing on its own until released, and counts leases lost in `lost`.
import { Redis } from "ioredis";

/** The lease length every library is given (what the peers' READMEs show, in that range). */
export const TTL_MS = 10_000;

/**
 * Plain ioredis clients with default options, connected. (Not lazyConnect: surelock duplicates the
 * client for its wake-up connection, and a lazy duplicate only connects at its first command.)
 */
export async function connect(ports) {
  const clients = ports.map((port) => new Redis({ port, host: "127.0.0.1" }));
  await Promise.all(clients.map((c) => c.ping()));
  return clients;
}

export async function disconnect(clients) {
  await Promise.all(clients.map(async (c) => {
    try {
      await c.quit();
    } catch {
      c.disconnect();
    }
  }));
}

/**
 * redlock 5 and its fork auto-extend a lock only inside `using(resources, ttl, routine)`: this
 * takes a lease that way and resolves, once it is held, with the function that ends the routine
 * (and so releases the lock). An aborted `using` signal counts as a lost lease.
 */
export function holdWithUsing(redlock, adapter, key, ttlMs) {
  return new Promise((resolveHeld, rejectHeld) => {
    let finish;
    const done = new Promise((resolve) => { finish = resolve; });
    const using = redlock.using([key], ttlMs, async (signal) => {
      signal.addEventListener("abort", () => { adapter.lost++; }, { once: true });
      resolveHeld(async () => {
        finish();
        await using;
      });
      await done;
    });
    using.catch(rejectHeld);
  });
}
