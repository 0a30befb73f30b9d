/**
 * The messages told on a lock's channel, and the channel's per-instance inbox. The scripts publish
 * all but one of them (lib/queue.lua's `tell`, proclaim.lua, force-release.lua, count-down.lua);
 * the store publishes a vacancy itself (src/store/single-store.ts); the waiting room and the
 * watchers of an election read them. The grammar:
 *
 *   "g <ticket> <token> <pttl>"  the lock was granted to the waiter of `ticket` (its token, its hold's PTTL, ms)
 *   "t <ticket>"                 it is `ticket`'s turn to attempt (nothing granted: quorum mode, replicas)
 *   "e"                          news for those who watch who holds the lock: a leader proclaimed
 *                                itself, or the lock was freed with nobody to grant it to
 *   "*"                          a forced release: every waiter attempts again
 *
 * A latch's channel carries "0" (it opened): its listeners read any message as a prompt to look.
 *
 * Imports nothing: the primitives read "e" too, and they may not reach the rest of src/protocol/
 * (scripts/layers.mjs keeps this file in the base layer).
 */

/** A message on a lock's channel, decoded. */
export type ChannelMessage =
  | { readonly kind: "granted"; readonly ticket: string; readonly token: bigint; readonly pttlMs: number }
  | { readonly kind: "turn"; readonly ticket: string }
  /** "e": for watchers; nobody's turn. */
  | { readonly kind: "watch" }
  /** "*", or a message this version does not know: every waiter on the channel looks again. */
  | { readonly kind: "everyone" };

/** What the store publishes when a release frees a watched lock with nobody to grant it to. */
export const VACANCY = "e";

/** Decodes a lock channel's message. */
export function decodeMessage(message: string): ChannelMessage {
  const [kind, ticket, token, pttl] = message.split(" ");
  if (kind === "g" && ticket !== undefined && token !== undefined && pttl !== undefined) {
    return { kind: "granted", ticket, token: BigInt(token), pttlMs: Number(pttl) };
  }
  if (kind === "t" && ticket !== undefined) return { kind: "turn", ticket };
  if (kind === "e") return { kind: "watch" };
  return { kind: "everyone" };
}

/** Whether `message` is news for the watchers of who holds a lock ("e"). */
export function isWatchNews(message: string): boolean {
  return message === "e";
}

/**
 * A lock channel's part for one Surelock instance: grants and turns for that instance's tickets
 * (`<instance>.<n>`, Ids) are told there (`tell`, lib/queue.lua, builds the same name), so no
 * other process hears them.
 */
export function inboxOf(channel: string, instance: string): string {
  return `${channel}:${instance}`;
}
