/**
 * Who holds a lock, from its keys in creation-revision order: the whole queue discipline of the
 * etcd store, pure. A mutex or write hold holds when it is first; a read hold when no write hold is
 * ahead of it; a semaphore hold when the permits of every hold ahead of it and its own fit the limit
 * (strict arrival order: a large request is not overtaken by later small ones).
 */
import type { HolderValue } from "./layout.js";

export interface Queued {
  readonly key: string;
  readonly hold: string;
  readonly token: bigint;
  readonly lease: string;
  /** Undefined for a key under the prefix that is not a holder key (it blocks like a mutex). */
  readonly value: HolderValue | undefined;
  readonly modRevision: bigint;
}

export type Standing =
  | { readonly kind: "holding" }
  /** Wait until `key` (created at `token`) is deleted, then look again. */
  | { readonly kind: "behind"; readonly key: string; readonly token: bigint }
  /** Wait until any key ahead is deleted (a semaphore: any release may make room). */
  | { readonly kind: "behind-any" }
  /** A holder ahead agreed on another limit. */
  | { readonly kind: "conflict"; readonly limit: number }
  /** `token` is not in the queue (its key is gone). */
  | { readonly kind: "absent" };

const exclusive = (q: Queued): boolean => q.value === undefined || q.value.m === "x" || q.value.m === "w";

/** Where the hold created at `token` stands in `queue` (sorted by token, ascending). */
export function standing(queue: readonly Queued[], token: bigint): Standing {
  const at = queue.findIndex((q) => q.token === token);
  if (at < 0) return { kind: "absent" };
  const me = queue[at]!;
  const ahead = queue.slice(0, at);
  if (me.value?.m === "s") {
    const limit = me.value.n;
    // The oldest semaphore hold sets the limit: a later one that disagrees is the one refused (its
    // key may linger ahead of others until it is taken back; its permits then count, which only delays).
    const first = queue.find((q) => q.value?.m === "s")!;
    if (first.value!.n !== limit) return { kind: "conflict", limit: first.value!.n };
    if (ahead.some((q) => q.value?.m !== "s")) {
      const last = [...ahead].reverse().find((q) => q.value?.m !== "s")!;
      return { kind: "behind", key: last.key, token: last.token };
    }
    const used = ahead.reduce((sum, q) => sum + q.value!.p, 0);
    return used + me.value.p <= limit ? { kind: "holding" } : { kind: "behind-any" };
  }
  if (ahead.some((q) => q.value?.m === "s")) {
    const last = [...ahead].reverse().find((q) => q.value?.m === "s")!;
    return { kind: "behind", key: last.key, token: last.token };
  }
  if (me.value?.m === "r") {
    const writer = [...ahead].reverse().find(exclusive);
    return writer ? { kind: "behind", key: writer.key, token: writer.token } : { kind: "holding" };
  }
  if (at === 0) return { kind: "holding" };
  const before = ahead[ahead.length - 1]!;
  return { kind: "behind", key: before.key, token: before.token };
}
