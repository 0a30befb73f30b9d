/**
 * Work MemoryRedis has scheduled but not yet done (replies and messages on their way), counted
 * across the process, so a virtual clock can wait until the in-memory "network" is quiet
 * before it moves time on. Deliveries go through `deliverLater`, one event-loop turn later, as
 * if they had crossed a socket.
 *
 * The turn is Node's own setImmediate, taken from node:timers when this module loads: the fake
 * timers of test runners (`vi.useFakeTimers()`, `jest.useFakeTimers()`, node:test's mock.timers)
 * replace the global one, and a reply must arrive all the same, as a socket's would.
 */
import * as timers from "node:timers";

const nextTurn: (fn: () => void) => unknown = timers.setImmediate;

let inFlight = 0;

/** Runs `fn` on a later event-loop turn (setImmediate), counted as in flight until it ran. */
export function deliverLater(fn: () => void): void {
  inFlight++;
  nextTurn(() => {
    inFlight--;
    fn();
  });
}


/**
 * Resolves once no delivery is pending and two event-loop turns in a row started none (so the
 * promise chains they resolved have run too). Gated commands do not count: they wait for the test.
 */
export async function settle(maxTurns = 100_000): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < maxTurns; i++) {
    await new Promise<void>((resolve) => nextTurn(resolve));
    quiet = inFlight === 0 ? quiet + 1 : 0;
    if (quiet >= 2) return;
  }
  throw new Error(`MemoryRedis did not settle within ${maxTurns} event-loop turns (messages keep causing more messages?)`);
}
