/**
 * The per-identity rules of a late reply (src/store/attempts.ts), without a server: a late reply
 * gives back only while nothing newer of its identity was sent, and a newer attempt waits for a
 * give-back on the wire. test/protocol/late-give-back.test.ts shows the same rules on Redis.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Attempts } from "../../src/store/attempts.js";
import type { KeepaliveItem } from "../../src/store/types.js";
import { within } from "../helpers/fixtures.js";

const ticket = (hold: string): KeepaliveItem => ({
  kind: "ticket",
  target: { family: "exclusive", keys: { key: "k", lock: "l", queue: "q", tickets: "t", channel: "c", released: "r" } },
  ask: { owner: "o", hold, ttlMs: 10_000, mode: "x", permits: 1, ticketLeaseMs: 3_000 },
});

describe("Attempts: what a late reply gives back", () => {
  it("a late reply gives back while it is the newest request of its identity, once", () => {
    const a = new Attempts();
    const first = a.sent("h");
    assert.equal(a.late("h", first), true);
    assert.equal(a.late("h", first), false, "given back once");
  });

  it("a newer attempt of the identity answers for an older late one", () => {
    const a = new Attempts();
    const first = a.sent("h");
    const second = a.sent("h");
    assert.equal(a.late("h", first), false);
    a.answered("h", second);
    assert.equal(a.late("h", second), false, "answered in time: nothing to give back late");
  });

  it("an answered attempt leaves an unanswered newer one to its own reply", () => {
    const a = new Attempts();
    const first = a.sent("h");
    const second = a.sent("h");
    a.answered("h", first);
    assert.equal(a.late("h", second), true);
  });

  it("a ticket's refresh behind an unanswered attempt answers for it; the refresh's answer clears it", () => {
    const a = new Attempts();
    const attempt = a.sent("h");
    assert.equal(a.refreshing([ticket("other")])?.length, 0, "only tickets with an attempt on the wire are marked");
    const marks = a.refreshing([ticket("h")]);
    assert.equal(a.late("h", attempt), false, "the refresh is newer");
    a.refreshed(marks);
    assert.equal(new Attempts().refreshing([ticket("h")]), undefined, "nothing on the wire: no marks");
  });

  it("an attempt answered after a refresh was sent clears the refresh's mark too", () => {
    const a = new Attempts();
    const attempt = a.sent("h");
    a.refreshing([ticket("h")]);
    a.answered("h", attempt);
    assert.equal(a.refreshing([ticket("h")]), undefined, "nothing of the identity is on the wire");
  });

  it("a give-back is newer than every attempt before it, and a newer attempt sees it until it settled", async () => {
    const a = new Attempts();
    const attempt = a.sent("h");
    let finish!: () => void;
    const giving = a.giveBack("h", () => new Promise<void>((resolve) => { finish = resolve; }));
    assert.equal(a.late("h", attempt), false, "the give-back covers the late reply");
    const back = a.givingBack("h");
    assert.ok(back, "a newer attempt waits for it");
    assert.equal(a.givenBackSince("h", back), false);
    finish();
    await within(1_000, giving, "the give-back");
    await within(1_000, back, "its settling");
    assert.equal(a.givingBack("h"), undefined, "settled: nothing to wait for");
  });

  it("a second give-back while the first is on the wire chains behind it, and is seen as newer", async () => {
    const a = new Attempts();
    let finish!: () => void;
    const first = a.giveBack("h", () => new Promise<void>((resolve) => { finish = resolve; }));
    const back = a.givingBack("h") as Promise<void>;
    const second = a.giveBack("h", () => Promise.resolve());
    assert.equal(a.givenBackSince("h", back), true, "an attempt that waited for the first is not sent");
    await within(1_000, second, "the second give-back");
    assert.ok(a.givingBack("h"), "still settling: the first is on the wire");
    finish();
    await within(1_000, first, "the first give-back");
    await within(1_000, a.givingBack("h") ?? Promise.resolve(), "both settled");
    assert.equal(a.givingBack("h"), undefined);
  });

  it("a step aside settles the identity: no late reply gives anything back", () => {
    const a = new Attempts();
    const attempt = a.sent("h");
    a.settle("h");
    assert.equal(a.late("h", attempt), false);
  });
});
