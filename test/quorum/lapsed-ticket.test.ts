// A waiter whose ticket lapsed in quorum mode attempts again and is served. An ordered line's
// refresh never puts a lapsed ticket back (only an attempt places it, at its order), and a release
// tells only the heads of the lines: a waiter paused past its ticket lease (torture seed 3, a
// worker stopped 1.2 s with a ttl of 402 ms) stood in no line, heard of no turn, and waited until
// its timeout while the lock was free. Three real redis-servers; the lapse is made by removing the
// waiter's ticket from every node, as its expiry would.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Surelock } from "../../src/index.js";
import { startPrimaries, stopAll } from "../helpers/redis-topology.js";
import { eventually, fastClient, ready, within } from "./support.js";

after(stopAll);

describe("quorum mode: a waiter whose ticket lapsed", () => {
  it("attempts again when its refresh finds it in no line, and gets the lock once it is free", async () => {
    const nodes = await startPrimaries(3);
    const clients = () => nodes.map((n) => fastClient(n.port));
    const [forA, forB, direct] = [clients(), clients(), clients()];
    await Promise.all([...forA, ...forB, ...direct].map((c) => ready(c)));
    const a = new Surelock({ redis: forA, ttl: 10_000, commandTimeout: 1_000 });
    // A short ttl: its ticket lease and refresh period are short too.
    const b = new Surelock({ redis: forB, ttl: 600, commandTimeout: 1_000 });
    const key = "lapsed-ticket";
    try {
      const held = await within(5_000, a.mutex(key).acquire(), "A's acquire");
      const waiting = b.mutex(key).acquire({ timeout: 20_000 });
      waiting.catch(() => {}); // awaited below
      const tickets = `surelock:{${key}}:tickets`;
      const queue = `surelock:{${key}}:queue`;
      await eventually(5_000, "B's ticket in every node's line", async () =>
        (await Promise.all(direct.map((c) => c.llen(queue)))).every((n) => n === 1));
      // The ticket lapses everywhere (its waiter was paused past its lease).
      await Promise.all(direct.map((c) => c.del(tickets, queue)));
      await within(5_000, held.release(), "A's release");
      // Served by its next refresh (a third of its ticket lease, 200 ms) at the latest: well within
      // this bound, which is half of its own timeout (before the fix it waited for that timeout).
      const lease = await within(10_000, waiting, "B's acquire after its ticket lapsed");
      assert.ok(lease.held);
      await within(5_000, lease.release(), "B's release");
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
      for (const c of [...forA, ...forB, ...direct]) c.disconnect();
    }
  });
});
