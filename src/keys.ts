/**
 * Key and channel names. Everything of one lock is `<prefix>:{<key>}:<part>` (or
 * `<prefix>:<kind>:{<key>}:<part>` for kinds other than the mutex): the user's key is the hash
 * tag, so all parts of one lock live in one Cluster slot and one script can touch them.
 */

/** A mutex: its lock hash, its queue, the tombstones of its released entries, its wake-up channel. */
export interface ExclusiveKeys {
  /** The user's key, as given. */
  readonly key: string;
  readonly lock: string;
  readonly queue: string;
  readonly tickets: string;
  /** The prefix of its released entries' tombstones: `<released>:<entry>` each (see `tombstoneOf`). */
  readonly released: string;
  readonly channel: string;
}

/** A semaphore or read-write lock: its state hash, holders zset, a writer's entries, its queue. */
export interface SharedKeys {
  readonly key: string;
  readonly state: string;
  readonly holders: string;
  readonly entries: string;
  readonly queue: string;
  readonly tickets: string;
  readonly channel: string;
}

/**
 * Several mutexes taken as one (a multiLock): each key's own mutex keys, so a multiLock and a
 * `mutex(key)` of one of its keys exclude each other.
 */
export interface MultiKeys {
  /** The keys as one name, for errors and diagnostics: their JSON array, as given. */
  readonly key: string;
  /** Each key's mutex keys, in the order given. */
  readonly each: readonly ExclusiveKeys[];
}

/** Kinds of lock, each in its own name space. */
export type SharedKind = "rw" | "sem";

/** Kinds built on a mutex's hash in a name space of their own (a mutex itself has none). */
export type ExclusiveKind = "election";

/** A countdown latch: its state hash and the channel that announces it reached zero. */
export interface LatchKeys {
  readonly key: string;
  readonly state: string;
  readonly channel: string;
}

/**
 * The tombstone a released entry of a mutex leaves for the replay window (release.lua): a string
 * key of its own, in the lock's slot, so that a replay finds it with one EXISTS.
 */
export function tombstoneOf(keys: ExclusiveKeys, entry: string): string {
  return `${keys.released}:${entry}`;
}

/**
 * A mutex's names. Every held lease keeps its lock's, so none is kept: each is built when asked
 * for (a renewal names the lock once per tick, an acquire or release a few once per call), and a
 * held lease's keys are its user's key and the shared prefix.
 */
class MutexKeys implements ExclusiveKeys {
  readonly key: string;
  /** `<prefix>` or `<prefix>:<kind>`: shared by every lock of one name space. */
  readonly #space: string;

  constructor(key: string, space: string) {
    this.key = key;
    this.#space = space;
  }

  get lock(): string {
    return `${this.#space}:{${this.key}}:lock`;
  }

  get queue(): string {
    return `${this.#space}:{${this.key}}:queue`;
  }

  get tickets(): string {
    return `${this.#space}:{${this.key}}:tickets`;
  }

  get released(): string {
    return `${this.#space}:{${this.key}}:released`;
  }

  get channel(): string {
    return `${this.#space}:{${this.key}}:wake`;
  }

  /** As a mutex's lock target (`{ family, keys }`): the same object, one fewer per held lease. */
  get family(): "exclusive" {
    return "exclusive";
  }

  get keys(): ExclusiveKeys {
    return this;
  }
}

/** A mutex's lock target and its keys in one object (see `KeySpace.mutexTarget`). */
export type MutexTarget = ExclusiveKeys & { readonly family: "exclusive"; readonly keys: ExclusiveKeys };

export class KeySpace {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  exclusive(key: string, kind?: ExclusiveKind): ExclusiveKeys {
    return new MutexKeys(key, kind === undefined ? this.prefix : `${this.prefix}:${kind}`);
  }

  /** A mutex's keys, which are also its lock target (`target.keys` is the object itself). */
  mutexTarget(key: string): MutexTarget {
    return new MutexKeys(key, this.prefix);
  }

  /** A multiLock's keys: each key's mutex keys, under one name for errors and diagnostics. */
  multi(keys: readonly string[]): MultiKeys {
    return { key: JSON.stringify(keys), each: keys.map((key) => this.exclusive(key)) };
  }

  shared(key: string, kind: SharedKind): SharedKeys {
    const base = `${this.prefix}:${kind}:{${key}}`;
    return {
      key,
      state: `${base}:state`,
      holders: `${base}:holders`,
      entries: `${base}:entries`,
      queue: `${base}:queue`,
      tickets: `${base}:tickets`,
      channel: `${base}:wake`,
    };
  }

  latch(key: string): LatchKeys {
    const base = `${this.prefix}:latch:{${key}}`;
    return { key, state: `${base}:state`, channel: `${base}:wake` };
  }

  /** The fencing guard of a resource: highest token seen and the writers' last writes. */
  guard(resource: string): string {
    return `${this.prefix}:guard:{${resource}}`;
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
