/**
 * What happens to a late or lost reply, per identity, on one deployment. An identity is an entry id
 * (a fresh attempt's is its hold id, which is also its ticket). An attempt whose reply missed its
 * deadline still ran, or will run, on Redis: when its reply comes, what it took is given back,
 * unless a newer request of the same identity was sent behind it, which finds that state (a
 * replay) and answers for it; a give-back sent then would land behind the newer request and take
 * away what it counts. And a newer attempt waits for a give-back of its identity still on the wire.
 */
import type { KeepaliveItem } from "./types.js";

/** The refreshes a keep-alive batch sends behind unanswered attempts: each ticket, and its mark. */
export type RefreshMarks = readonly (readonly [string, number])[];

export class Attempts {
  /**
   * The newest request sent per identity, while an attempt's reply may come late: an attempt's
   * number, or the negated number of a refresh of the ticket sent behind an attempt still
   * unanswered.
   */
  readonly #newest = new Map<string, number>();
  /**
   * Give-backs on the wire per identity. One is two scripts (leave the line, then release the
   * entry), the second sent once the first is answered: a newer attempt of that identity is sent
   * only after the whole give-back settled, else it could run between the two, find its entry (a
   * replay), answer "entered", and have the release take that entry out.
   */
  readonly #givingBack = new Map<string, Promise<void>>();
  #count = 0;

  /** The give-back of `entry` still on the wire, if any: a newer attempt is sent once it settled. */
  givingBack(entry: string): Promise<void> | undefined {
    return this.#givingBack.get(entry);
  }

  /** Whether `entry` was given back again after `back` (the give-back an attempt waited for) began. */
  givenBackSince(entry: string, back: Promise<void>): boolean {
    const again = this.#givingBack.get(entry);
    return again !== undefined && again !== back;
  }

  /** An attempt of `entry` is sent: its number, for `late` and `answered`. */
  sent(entry: string): number {
    const attempt = ++this.#count;
    this.#newest.set(entry, attempt);
    return attempt;
  }

  /**
   * Its reply came after the caller gave up on it: whether to give back what it took. Not when the
   * same identity was attempted, refreshed or given back since (the newer request answers for it).
   */
  late(entry: string, attempt: number): boolean {
    if (this.#newest.get(entry) !== attempt) return false;
    this.#newest.delete(entry);
    return true;
  }

  /**
   * Its reply came in time: nothing to give back late, neither for it nor for a refresh sent
   * behind it. (Unanswered, it stays: its reply may come.)
   */
  answered(entry: string, attempt: number): void {
    const newest = this.#newest.get(entry);
    if (newest === attempt || (newest !== undefined && newest < 0)) this.#newest.delete(entry);
  }

  /**
   * Gives `entry` back (`giveBack` sends it), behind every attempt of this identity: no late
   * reply needs a give-back of its own, and a newer attempt waits until it settled.
   */
  giveBack(entry: string, giveBack: () => Promise<void>): Promise<void> {
    this.#newest.delete(entry);
    const giving = giveBack();
    const before = this.#givingBack.get(entry);
    const settled = Promise.allSettled([before, giving]).then(() => {
      if (this.#givingBack.get(entry) === settled) this.#givingBack.delete(entry);
    });
    this.#givingBack.set(entry, settled);
    return giving;
  }

  /** A request that settles `entry`'s attempts otherwise (a step aside): no late reply gives anything back. */
  settle(entry: string): void {
    this.#newest.delete(entry);
  }

  /**
   * A refresh sent behind an attempt whose reply is late is a newer request of that identity: it
   * may find the hold that attempt founded for the ticket and report it granted, which the waiter
   * then counts; a give-back triggered by the late reply would run after it and take that hold
   * away. So the late reply gives nothing back: the waiter takes the grant, attempts again (a
   * replay), or gives back all of it when its wait ends. Marks the batch's refreshes of tickets
   * with an attempt unanswered; undefined when there is none.
   */
  refreshing(items: readonly KeepaliveItem[]): RefreshMarks | undefined {
    if (this.#newest.size === 0) return undefined;
    const marks: [string, number][] = [];
    for (const item of items) {
      if (item.kind !== "ticket" || !this.#newest.has(item.ask.hold)) continue;
      const mark = -++this.#count;
      this.#newest.set(item.ask.hold, mark);
      marks.push([item.ask.hold, mark]);
    }
    return marks;
  }

  /** The batch was answered: every reply sent before its refreshes came already, none can come late. */
  refreshed(marks: RefreshMarks | undefined): void {
    if (marks) for (const [entry, mark] of marks) if (this.#newest.get(entry) === mark) this.#newest.delete(entry);
  }
}
