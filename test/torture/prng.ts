/**
 * A small seeded PRNG: a Weyl sequence through a 32-bit avalanche mix. Every random choice of a
 * run (each worker's operations, the nemesis's faults) comes from one of these, derived from the
 * run's seed and a label, so one seed always plans the same run.
 */

/** Mixes 32 bits so that nearby inputs give unrelated outputs. */
function mix32(x: number): number {
  let z = x >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x7feb352d);
  z = Math.imul(z ^ (z >>> 15), 0x846ca68b);
  return (z ^ (z >>> 16)) >>> 0;
}

/** A seed for `labels` under `seed` (for example a worker's, from the run's seed and its index). */
export function deriveSeed(seed: number, ...labels: readonly (string | number)[]): number {
  let h = mix32(seed ^ 0x9e3779b9);
  for (const label of labels) {
    for (const ch of String(label)) h = mix32(h ^ Math.imul(ch.charCodeAt(0), 0x01000193));
    h = mix32(h + 0x632be5ab);
  }
  return h;
}

export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = mix32(seed) || 0x2545f491;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x9e3779b9) >>> 0;
    return mix32(this.#state) / 4294967296;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** One of the entries, with probability proportional to its weight. */
  weighted<T>(table: readonly (readonly [T, number])[]): T {
    const total = table.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [value, weight] of table) {
      roll -= weight;
      if (roll < 0) return value;
    }
    return (table[table.length - 1] as readonly [T, number])[0];
  }

  /** Exponentially distributed with this mean (gaps between independent events). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }
}
