/**
 * Which owner the current async flow holds each lock as. A nested acquire of a lock the flow
 * already holds re-enters under the same owner instead of waiting for itself. Scoped to one
 * Surelock instance: two instances never re-enter each other's locks.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export class Reentrancy {
  readonly #storage = new AsyncLocalStorage<ReadonlyMap<string, string>>();

  /** The owner under which this flow holds `lockId`, if it does. */
  ownerOf(lockId: string): string | undefined {
    return this.#storage.getStore()?.get(lockId);
  }

  /** Runs `fn` in a flow that holds `lockId` as `owner`. */
  run<T>(lockId: string, owner: string, fn: () => T): T {
    const held = new Map(this.#storage.getStore());
    held.set(lockId, owner);
    return this.#storage.run(held, fn);
  }
}
