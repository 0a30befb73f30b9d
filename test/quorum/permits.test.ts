// Quorum mode: counted permits over five real redis-server processes. An acquisition of n permits
// counts them where its semaphore's quorum holds them; the limit is fixed (setPermits() refused).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { UnsupportedError } from "../../src/index.js";
import { fiveNodes } from "./support.js";

const five = fiveNodes();
const { nodes, quorum } = five;

const stateKey = (key: string): string => `surelock:sem:{${key}}:state`;
const fieldOn = (key: string, field: string): Promise<string[]> =>
  Promise.all(nodes.filter((n) => n.alive).map(async (n) => String(await n.command("HGET", stateKey(key), field))));

void describe("quorum mode: counted permits and setPermits()", () => {
  void it("n permits are taken at once on every node and given back together", async () => {
    const sem = quorum(10_000).semaphore("q:counted", { permits: 3 });
    const two = await sem.acquire({ permits: 2 });
    assert.equal(two.permits, 2);
    assert.deepEqual(await fieldOn("q:counted", "u"), ["2", "2", "2", "2", "2"]);
    assert.equal(await sem.tryAcquire({ permits: 2 }), null);
    const one = await sem.tryAcquire();
    assert.ok(one);
    await two.release();
    await one.release();
    assert.deepEqual(await fieldOn("q:counted", "u"), ["0", "0", "0", "0", "0"]);
  });

  void it("setPermits() is refused in quorum mode, before anything is sent: the quorum a permit needs depends on the limit", async () => {
    const sem = quorum(10_000).semaphore("q:fixed", { permits: 2 });
    const lease = await sem.acquire();
    await assert.rejects(sem.setPermits(3), (e: unknown) => e instanceof UnsupportedError && /limit is fixed/.test(e.message));
    assert.equal(sem.permits, 2);
    assert.deepEqual(await fieldOn("q:fixed", "p"), ["2", "2", "2", "2", "2"]);
    await lease.release();
  });
});
