/**
 * The protocol's encoding without a server (src/protocol/): how an attempt's way in becomes the
 * scripts' `join` and what its give-back sends, and the channel messages' grammar. The scripts'
 * side of each is specified in test/scripts/.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KeySpace } from "../../src/keys.js";
import { decodeMessage, inboxOf, isWatchNews } from "../../src/protocol/channel.js";
import { giveBackOf, joinOf } from "../../src/protocol/holds.js";
import type { AcquireCall, Reentry } from "../../src/store/types.js";

const keys = new KeySpace("surelock");
const call = (reentry: Reentry, family: "exclusive" | "shared" = "exclusive"): AcquireCall => ({
  target: family === "exclusive" ? { family, keys: keys.exclusive("k") } : { family, keys: keys.shared("k", "rw"), limit: 0 },
  ask: { owner: "o", hold: "h2", ttlMs: 10_000, mode: family === "exclusive" ? "x" : "r", permits: 1, ticketLeaseMs: 0 },
  entry: reentry.kind === "join" ? "e2" : "h2",
  reentry,
});

describe("the protocol's encoding", () => {
  it("each way in is the scripts' join argument", () => {
    assert.equal(joinOf({ kind: "fresh" }), "");
    assert.equal(joinOf({ kind: "owner" }), "*");
    assert.equal(joinOf({ kind: "join", hold: "h1" }), "h1");
    assert.equal(joinOf({ kind: "nested", via: "h1" }), "h1");
  });

  it("a give-back leaves the line for a fresh attempt or a join by owner, and releases what a join or nested read added", () => {
    assert.deepEqual(giveBackOf(call({ kind: "fresh" })), { leave: true, release: undefined });
    assert.deepEqual(giveBackOf(call({ kind: "owner" })), { leave: true, release: "*" }, "release.lua finds the owner's hold by the entry");
    assert.deepEqual(giveBackOf(call({ kind: "join", hold: "h1" })), { leave: false, release: "h1" }, "the entry added to the section's hold");
    assert.deepEqual(giveBackOf(call({ kind: "nested", via: "h1" }, "shared")), { leave: false, release: "h2" }, "a nested read's own hold");
  });

  it("the channel messages decode by their grammar; anything else sends every waiter to look again", () => {
    assert.deepEqual(decodeMessage("g i.1 1732010203040506 30000"), { kind: "granted", ticket: "i.1", token: 1732010203040506n, pttlMs: 30_000 });
    assert.deepEqual(decodeMessage("t i.2"), { kind: "turn", ticket: "i.2" });
    assert.deepEqual(decodeMessage("e"), { kind: "watch" });
    assert.deepEqual(decodeMessage("*"), { kind: "everyone" });
    assert.deepEqual(decodeMessage("g i.1"), { kind: "everyone" }, "a grant without its token and PTTL");
    assert.equal(isWatchNews("e"), true);
    assert.equal(isWatchNews("*"), false);
    assert.equal(inboxOf("surelock:{k}:wake", "i"), "surelock:{k}:wake:i", "the name lib/queue.lua's tell publishes to");
  });
});
