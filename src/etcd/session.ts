/**
 * The instance's session: one etcd lease that every hold without a `leaseTime` lives under, kept
 * alive by a watchdog (etcd's own concurrency package calls this a session). The lease is trusted
 * until the last acknowledged keep-alive's *sending* time plus the TTL etcd granted, less a drift
 * margin: etcd counts the TTL from when the request arrived, which is later, so the server never
 * frees the keys before this side has given them up. When that instant passes without a newer
 * acknowledgement, or etcd answers that the lease is gone, the generation's signal aborts: every
 * hold under it is lost at once. The next acquisition grants a new lease (a new generation).
 */
import { trustedUntil, type Clock } from "../clock.js";
import { widelyWatched, within } from "../deadline.js";
import { bounded, closeStream, typed, type EtcdClient } from "./calls.js";

/** Why a session generation ended; each hold turns it into its own LockLostError. */
export class SessionLost extends Error {
  constructor(
    readonly reason: "expired" | "unreachable",
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = "SessionLost";
  }
}

/** One granted lease and its life. */
export class Generation {
  readonly #controller = widelyWatched();
  #heldUntil: number;
  #expiry: unknown;
  #tick: unknown;
  #lastError: unknown;

  constructor(
    readonly id: string,
    readonly ttlMs: number,
    heldUntil: number,
    private readonly session: Session,
  ) {
    this.#heldUntil = heldUntil;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  get alive(): boolean {
    return !this.#controller.signal.aborted;
  }
  heldUntil(): number {
    return this.#heldUntil;
  }

  /** The watchdog: a round every third of the TTL, and sooner after a failed one. */
  start(): void {
    this.#armExpiry();
    this.#schedule(this.ttlMs / 3);
  }

  /** An acknowledgement of a keep-alive sent at `sentAt`, granting `ttlSeconds`. */
  acknowledged(sentAt: number, ttlSeconds: number): void {
    if (!this.alive) return;
    if (ttlSeconds <= 0) {
      this.end(new SessionLost("expired", `etcd lease ${this.id} expired or was revoked`));
      return;
    }
    const ttlMs = ttlSeconds * 1000;
    this.#heldUntil = Math.max(this.#heldUntil, trustedUntil(sentAt, ttlMs));
    this.#lastError = undefined;
    this.#armExpiry();
  }

  failed(error: unknown): void {
    this.#lastError = error;
  }

  end(reason: SessionLost): void {
    this.session.clock.clearTimeout(this.#expiry);
    this.session.clock.clearTimeout(this.#tick);
    if (this.alive) this.#controller.abort(reason);
  }

  #schedule(ms: number): void {
    this.session.clock.clearTimeout(this.#tick);
    this.#tick = this.session.clock.setTimeout(() => void this.#round(), ms);
  }

  async #round(): Promise<void> {
    if (!this.alive) return;
    try {
      await this.session.keepalive(this);
      this.#schedule(this.ttlMs / 3);
      if (this.alive) this.session.onRenewed();
    } catch (error) {
      this.failed(error);
      // Try again soon: the keys are lost anyway once heldUntil passes without an answer.
      this.#schedule(Math.min(this.ttlMs / 3, 250));
    }
  }

  #armExpiry(): void {
    const clock = this.session.clock;
    clock.clearTimeout(this.#expiry);
    const left = this.#heldUntil - clock.now();
    if (left <= 0) {
      const cause = this.#lastError;
      this.end(
        cause === undefined
          ? new SessionLost("expired", `etcd lease ${this.id} ran out before a keep-alive was acknowledged`)
          : new SessionLost("unreachable", `etcd lease ${this.id} could not be kept alive: ${(cause as Error).message ?? String(cause)}`, { cause }),
      );
      return;
    }
    this.#expiry = clock.setTimeout(() => this.#armExpiry(), Math.ceil(left));
  }
}

export class Session {
  #current: Generation | undefined;
  #granting: Promise<Generation> | undefined;
  #closed = false;

  constructor(
    readonly client: EtcdClient,
    readonly clock: Clock,
    /** The TTL asked for; etcd may grant more (its minimum), and counts in seconds. */
    readonly ttlMs: number,
    readonly requestMs: number,
    /** Called after each acknowledged keep-alive round (the store checks its holds' keys then). */
    readonly onRenewed: () => void = () => undefined,
  ) {}

  /** The live generation, granting a new lease when there is none. */
  async lease(): Promise<Generation> {
    const g = this.#current;
    if (g?.alive && g.heldUntil() > this.clock.now()) return g;
    this.#granting ??= this.#grant().finally(() => {
      this.#granting = undefined;
    });
    return this.#granting;
  }

  /** The live generation, if there is one (no request). */
  get current(): Generation | undefined {
    return this.#current?.alive ? this.#current : undefined;
  }

  async #grant(): Promise<Generation> {
    const sentAt = this.clock.now();
    let res;
    try {
      res = await this.client.leaseClient.leaseGrant({ TTL: Math.ceil(this.ttlMs / 1000) }, bounded(this.requestMs));
    } catch (error) {
      throw typed(error, "a lease grant");
    }
    const ttlMs = Number(res.TTL) * 1000;
    const g = new Generation(res.ID, ttlMs, trustedUntil(sentAt, ttlMs), this);
    if (this.#closed) {
      void this.revoke(g.id);
      throw new SessionLost("expired", "the store is closed");
    }
    this.#current = g;
    g.start();
    return g;
  }

  /** One keep-alive of `g`, acknowledged or thrown. Also used by `extend` to renew now. */
  async keepalive(g: Generation): Promise<void> {
    const sentAt = this.clock.now();
    const ttl = await keepaliveOnce(this.client, g.id, this.requestMs);
    g.acknowledged(sentAt, ttl);
  }

  /** Best effort: frees the keys now rather than at the TTL. */
  async revoke(id: string): Promise<void> {
    try {
      await this.client.leaseClient.leaseRevoke({ ID: id }, bounded(this.requestMs));
    } catch {
      // The lease ends at its TTL anyway.
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const g = this.#current;
    this.#current = undefined;
    if (g) {
      g.end(new SessionLost("expired", "the store was closed"));
      await this.revoke(g.id);
    }
  }
}

/**
 * One keep-alive request on a stream of its own: etcd's answer (seconds left, 0 when the lease is
 * gone). The request is written and the stream half-closed at once: etcd answers, then ends the
 * stream cleanly (a cancel after the answer would count against the host, see `closeStream`).
 */
export async function keepaliveOnce(client: EtcdClient, id: string, ms: number): Promise<number> {
  let stream;
  try {
    stream = await within(client.leaseClient.leaseKeepAlive(bounded(ms)), ms, () => new Error("keep-alive stream not opened in time"));
  } catch (error) {
    throw typed(error, "a keep-alive");
  }
  const s = stream;
  const answer = new Promise<number>((resolve, reject) => {
    s.on("data", (res) => resolve(Number(res.TTL)));
    s.on("error", (error) => reject(typed(error, "a keep-alive")));
    s.on("end", () => reject(typed(new Error("keep-alive stream ended"), "a keep-alive")));
    s.write({ ID: id });
    s.end();
  });
  try {
    return await within(answer, ms, () => typed(new Error(`no keep-alive answer within ${ms} ms`), "a keep-alive"));
  } finally {
    closeStream(s);
  }
}
