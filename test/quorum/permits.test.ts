// Quorum mode: counted permits and setPermits() over five real redis-server processes. An
// acquisition of n permits counts them on a majority; setPermits() stores the limit on a majority
// (or throws QuorumError), and the waiter a raise lets in is told it is its turn.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { QuorumError } from "../../src/index.js";
import { startsWaiting } from "../helpers/fixtures.js";
import { fiveNodes, within } from "./support.js";

const five = fiveNodes();
const { nodes, quorum, kill } = five;

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

  void it("setPermits() raising the limit lets a waiting acquisition of another process in", async () => {
    const admin = quorum(10_000).semaphore("q:grow", { permits: 1 });
    const held = await admin.acquire();
    const waits = startsWaiting("q:grow");
    const waiting = quorum(10_000).semaphore("q:grow", { permits: 1 }).acquire({ permits: 1, timeout: 10_000 });
    await waits;
    await admin.setPermits(2);
    assert.deepEqual(await fieldOn("q:grow", "p"), ["2", "2", "2", "2", "2"]);
    const lease = await within(5_000, "the waiter to be let in", waiting);
    await lease.release();
    await held.release();
  });

  void it("setPermits() is applied with two nodes down, and rejects with QuorumError with three", async () => {
    const sem = quorum(10_000, { commandTimeout: 300 }).semaphore("q:majority", { permits: 2 });
    await kill([3, 4]);
    await sem.setPermits(3);
    assert.deepEqual(await fieldOn("q:majority", "p"), ["3", "3", "3"]);
    await kill([2]);
    await assert.rejects(sem.setPermits(4), (e: unknown) => e instanceof QuorumError && e.nodes.length === 5);
  });
});
