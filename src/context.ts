/** What every primitive of one Surelock instance shares. */
import { randomBytes } from "node:crypto";
import { ClosedError } from "./errors.js";
import type { KeySpace } from "./keys.js";
import type { Hold } from "./lease.js";
import type { Reentrancy } from "./reentrancy.js";
import type { Store } from "./store.js";
import type { WaitingRoom } from "./waiting.js";
import type { Watchdog } from "./watchdog.js";

export class Context {
  readonly store: Store;
  readonly watchdog: Watchdog;
  readonly waiting: WaitingRoom;
  readonly keys: KeySpace;
  readonly reentrancy: Reentrancy;
  readonly defaultTtlMs: number;
  /** Holds of this instance by `<redis key>\0<owner>`, so a re-entry joins its outer entry's hold. */
  readonly holds = new Map<string, Hold>();
  /** Unique per instance: owners are `<instance>:<n>`, unique across processes without coordination. */
  readonly #instance = randomBytes(9).toString("base64url");
  #owners = 0;
  closed = false;

  constructor(init: {
    store: Store; watchdog: Watchdog; waiting: WaitingRoom; keys: KeySpace; reentrancy: Reentrancy; defaultTtlMs: number;
  }) {
    this.store = init.store;
    this.watchdog = init.watchdog;
    this.waiting = init.waiting;
    this.keys = init.keys;
    this.reentrancy = init.reentrancy;
    this.defaultTtlMs = init.defaultTtlMs;
  }

  newOwner(): string {
    return `${this.#instance}:${++this.#owners}`;
  }

  /** Whether `owner` was made by `newOwner()` (no other instance or process can hold it). */
  madeOwner(owner: string): boolean {
    return owner.startsWith(`${this.#instance}:`);
  }

  assertOpen(): void {
    if (this.closed) throw new ClosedError();
  }
}
