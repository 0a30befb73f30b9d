// Quorum mode: counted permits and setPermits() over five real redis-server processes. An
// acquisition of n permits counts them on a majority; setPermits() stores the limit on a majority
// (or throws QuorumError), and the waiter a raise lets in is told it is its turn.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { QuorumError } from "../../src/index.js";
import { startsWaiting } from "../helpers/fixtures.js";
import { fastClient, fiveNodes, within } from "./support.js";

const five = fiveNodes();
const { nodes, clients, quorum, kill } = five;

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

  void it("nodes that missed a setPermits() (it reached a majority) do not turn a full semaphore into a ConflictError", async () => {
    const sem = quorum(10_000).semaphore("q:missed", { permits: 3 });
    const holders = [await sem.acquire(), await sem.acquire()];
    // An admin whose connections to nodes 3 and 4 are closed: its change reaches nodes 0 to 2 only.
    const cut = [fastClient(nodes[3]!.port), fastClient(nodes[4]!.port)];
    for (const c of cut) c.disconnect();
    await quorum(10_000, { redis: [...clients.slice(0, 3), ...cut] }).semaphore("q:missed", { permits: 3 }).setPermits(2);
    assert.deepEqual(await fieldOn("q:missed", "p"), ["2", "2", "2", "3", "3"]);
    // A caller with the new number: full on the three nodes that have it; the two others answer
    // "another limit", which is no majority: it waits, as for any full semaphore.
    const current = quorum(10_000).semaphore("q:missed", { permits: 2 });
    await assert.rejects(current.acquire({ timeout: 300 }), { code: "ERR_SURELOCK_TIMEOUT" });
    await holders[0]!.release();
    const lease = await within(5_000, "a permit once one is free", current.acquire({ timeout: 3_000 }));
    await lease.release();
    await holders[1]!.release();
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
