/**
 * Key and channel names. Everything of one lock is `<prefix>:{<key>}:<part>`: the user's key is
 * the hash tag, so all parts of one lock live in one Cluster slot and one script can touch them.
 */

/** The Redis names belonging to one user key. */
export interface LockKeys {
  /** The user's key, as given. */
  readonly key: string;
  /** Holder hash of a mutex / write lock: {o: owner, n: entries, t: token}. */
  readonly lock: string;
  /** Per-key fencing counter. */
  readonly fence: string;
  /** Zset of shared holders (semaphore permits, read locks): member -> deadline. */
  readonly shared: string;
  /** A waiting writer's mark, which holds new readers back. */
  readonly mark: string;
  /** Fair queue: list of waiter ids, and zset of their deadlines. */
  readonly queue: string;
  readonly deadlines: string;
  /** Wake-up channel, announced on release. */
  readonly channel: string;
}

export class KeySpace {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** `kind` separates primitives, so a mutex and a semaphore of the same name never collide. */
  of(key: string, kind: "mutex" | "rw" | "sem" = "mutex"): LockKeys {
    const base = `${this.prefix}:${kind === "mutex" ? "" : `${kind}:`}{${key}}`;
    return {
      key,
      lock: `${base}:lock`,
      fence: `${base}:fence`,
      shared: `${base}:shared`,
      mark: `${base}:writer-waiting`,
      queue: `${base}:queue`,
      deadlines: `${base}:queue-deadlines`,
      channel: `${base}:released`,
    };
  }

  /** The high-water mark of a resource protected by a fencing guard. */
  guard(resource: string): string {
    return `${this.prefix}:guard:{${resource}}:highest-token`;
  }
}

/** Redis Cluster slot of a key (CRC16/XMODEM of its hash tag, mod 16384). */
export function slotOf(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
