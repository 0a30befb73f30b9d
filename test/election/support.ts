/** An election observer whose readings a test can wait for, one by one. */
import type { Election, Leader } from "../../src/index.js";
import { within } from "../helpers/fixtures.js";

/** `owner=value`, or `none`: a reading as the tests compare them. */
export const describeLeader = (l: Leader | null): string => (l ? `${l.owner}=${l.value ?? "(no value)"}` : "none");

export class Observed {
  readonly seen: (Leader | null)[] = [];
  readonly done: Promise<void>;
  readonly #stop = new AbortController();
  #waiters: (() => void)[] = [];

  constructor(election: Election, signal?: AbortSignal) {
    const signals = [this.#stop.signal, ...(signal ? [signal] : [])];
    this.done = (async () => {
      for await (const leader of election.observe({ signal: AbortSignal.any(signals) })) {
        this.seen.push(leader);
        for (const wake of this.#waiters.splice(0)) wake();
      }
      for (const wake of this.#waiters.splice(0)) wake();
    })();
  }

  /** The readings as strings. */
  get log(): string[] {
    return this.seen.map(describeLeader);
  }

  /** Resolves with the first reading at index >= `from` that `match` accepts; rejects after `ms`. */
  async next(match: (l: Leader | null) => boolean, from = 0, ms = 5_000): Promise<Leader | null> {
    const find = (): { found: Leader | null } | undefined => {
      for (let i = from; i < this.seen.length; i++) if (match(this.seen[i] as Leader | null)) return { found: this.seen[i] as Leader | null };
      return undefined;
    };
    return within(ms, (async () => {
      for (;;) {
        const hit = find();
        if (hit) return hit.found;
        await new Promise<void>((resolve) => this.#waiters.push(resolve));
      }
    })(), `a reading after ${JSON.stringify(this.log)}`);
  }

  stop(): Promise<void> {
    this.#stop.abort();
    return this.done;
  }
}
