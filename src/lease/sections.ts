/**
 * Reentrancy follows a live hold, not a name: the flows started inside a `withLock` section (its
 * nested calls, sibling branches such as Promise.all, callbacks and timers) carry that section
 * through AsyncLocalStorage, and an acquire of the same lock in such a flow re-enters the section's
 * hold — for as long as the section lasts. Once the section's work has ended, a flow that still
 * runs (a timer, a listener, a promise) acquires as itself and waits like anyone else. Scoped to
 * one Surelock instance: two instances never re-enter each other's locks.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Lease } from "./lease.js";

/** One `withLock` section: its lease, its side of a read-write lock, and whether it is still running. */
export interface Section {
  readonly lease: Lease;
  /** 'w' for a mutex or a write side, 'r' for a read side. */
  readonly mode: "r" | "w";
  open: boolean;
}

export class Sections {
  readonly #storage = new AsyncLocalStorage<ReadonlyMap<string, Section>>();

  /** The section of `lockId` that the current flow runs in, if it is still running. */
  current(lockId: string): Section | undefined {
    const section = this.#storage.getStore()?.get(lockId);
    return section?.open ? section : undefined;
  }

  /**
   * Runs `fn` inside `section`, which stands for each of `lockIds` (a multiLock's: its own and each
   * key's mutex). Inside a write section a nested read keeps the write in scope.
   */
  run<T>(lockIds: readonly string[], section: Section, fn: () => T): T {
    const sections = new Map(this.#storage.getStore());
    let entered = false;
    for (const lockId of lockIds) {
      if (this.current(lockId)?.mode === "w" && section.mode === "r") continue;
      sections.set(lockId, section);
      entered = true;
    }
    return entered ? this.#storage.run(sections, fn) : fn();
  }
}
