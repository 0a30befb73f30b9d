/**
 * Names this process gives out. Hold, entry and ticket ids must never repeat across processes
 * and time, without coordination: a random instance part and a counter. Default owners also say
 * where they come from (host and pid), so `surelock inspect` can tell an operator who holds a lock.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

export class Ids {
  /** Random per Surelock instance (72 bits), the prefix of every id it makes. */
  readonly instance = randomBytes(9).toString("base64url");
  readonly #where: string;
  #next = 0;

  constructor() {
    // Host names are ASCII in practice; anything else is replaced rather than trusted.
    const host = hostname().replace(/[^\w.-]/g, "_").slice(0, 64) || "host";
    this.#where = `${host}:${process.pid}`;
  }

  /** A hold (also its ticket and its first entry) or an entry: unique across processes and time. */
  id(): string {
    return `${this.instance}.${(++this.#next).toString(36)}`;
  }

  /** A default owner: `<host>:<pid>:<instance>.<n>`, unique, and readable where it matters. */
  owner(): string {
    return `${this.#where}:${this.id()}`;
  }
}
