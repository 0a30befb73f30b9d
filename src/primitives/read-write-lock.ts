/**
 * A read-write lock: many readers or one writer, served in arrival order (a writer waits for the
 * readers ahead of it, and readers behind a waiting writer wait for it). A flow that holds the
 * write side reads without waiting; a flow that holds a read reads again without waiting behind
 * a waiting writer; a flow that holds only a read and asks for the write side would wait for
 * itself, so that is refused at once (DeadlockError).
 */
import type { Engine } from "../engine.js";
import { Lock, type SectionReentry } from "./lock.js";
import type { Section } from "../lease/sections.js";

/** Options of `Surelock.readWriteLock()`. */
export interface ReadWriteLockOptions {
  /** Lease length in ms (default: the Surelock's `ttl`). */
  readonly ttl?: number;
}

const INTERNAL = Symbol("surelock.rw");

/** The read or the write side of a ReadWriteLock, used like a Mutex. */
export class ReadWriteSide extends Lock {
  /** Which side this is. */
  readonly mode: "read" | "write";

  private constructor(token: typeof INTERNAL, rt: Engine, key: string, ttlMs: number, mode: "read" | "write") {
    if (token !== INTERNAL) throw new TypeError("use Surelock.readWriteLock()");
    const keys = rt.keys.shared(key, "rw");
    super(rt, {
      key,
      target: { family: "shared", keys, limit: 0 },
      lockId: keys.state,
      channel: keys.channel,
      mode: mode === "read" ? "r" : "w",
      ttlMs,
      sharesByOwner: mode === "write",
      reentry: mode === "read" ? readAgain : writeAgain,
    });
    this.mode = mode;
  }

  /** @internal */
  static _create(rt: Engine, key: string, ttlMs: number, mode: "read" | "write"): ReadWriteSide {
    return new ReadWriteSide(INTERNAL, rt, key, ttlMs, mode);
  }
}

/** A read inside a read or write section gets a read hold of its own, let in past the queue. */
function readAgain(section: Section | undefined): SectionReentry {
  return section ? { kind: "nested", via: section.lease._hold.ref.hold } : { kind: "fresh" };
}

function writeAgain(section: Section | undefined): SectionReentry {
  if (!section) return { kind: "fresh" };
  if (section.mode === "w") return { kind: "join", hold: section.lease._hold.ref.hold };
  return { kind: "deadlock", why: "this flow holds the read side and asked for the write side, which would wait for itself (release the read first)" };
}

/** Many readers or one writer on one key: `read()` and `write()` are used like a Mutex. */
export class ReadWriteLock {
  /** The user's key. */
  readonly key: string;
  readonly #read: ReadWriteSide;
  readonly #write: ReadWriteSide;

  private constructor(token: typeof INTERNAL, rt: Engine, key: string, ttlMs: number) {
    if (token !== INTERNAL) throw new TypeError("use Surelock.readWriteLock()");
    this.key = key;
    this.#read = ReadWriteSide._create(rt, key, ttlMs, "read");
    this.#write = ReadWriteSide._create(rt, key, ttlMs, "write");
  }

  /** @internal Use `Surelock.readWriteLock()`. */
  static _create(rt: Engine, key: string, ttlMs: number): ReadWriteLock {
    return new ReadWriteLock(INTERNAL, rt, key, ttlMs);
  }

  /** The shared side: any number of readers while no one writes. */
  read(): ReadWriteSide {
    return this.#read;
  }

  /** The exclusive side: one writer, no readers. */
  write(): ReadWriteSide {
    return this.#write;
  }
}
