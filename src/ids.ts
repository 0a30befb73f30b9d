/**
 * Names this process gives out. Hold, entry and ticket ids must never repeat across processes
 * and time, without coordination: a random instance part and a counter. Default owners also say
 * where they come from (host and pid), so `surelock inspect` can tell an operator who holds a lock.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

let where: string | undefined;

/** `<host>:<pid>`: where this process's default owners come from. */
function here(): string {
  // Host names are ASCII in practice; anything else is replaced rather than trusted.
  where ??= `${hostname().replace(/[^\w.-]/g, "_").slice(0, 64) || "host"}:${process.pid}`;
  return where;
}

/**
 * The default owner of the hold `hold` (`<host>:<pid>:<hold>`). A hold keeps no copy of it: it
 * is made again from the hold id whenever it is read.
 */
export function ownerOf(hold: string): string {
  return `${here()}:${hold}`;
}

export class Ids {
  /** Random per Surelock instance (72 bits), the prefix of every id it makes. */
  readonly instance = randomBytes(9).toString("base64url");
  #next = 0;

  /** A hold (also its ticket and its first entry) or an entry: unique across processes and time. */
  id(): string {
    return `${this.instance}.${(++this.#next).toString(36)}`;
  }

  /** A default owner: `<host>:<pid>:<instance>.<n>`, unique, and readable where it matters. */
  owner(): string {
    return ownerOf(this.id());
  }
}
