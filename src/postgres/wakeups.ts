/**
 * Store-owned wake-ups: one connection per store LISTENs on the schema's channel and hands each
 * notification to the listeners of its name. A notification is only a hint: it is delivered at
 * commit, lost while the connection is down, and never arrives through a transaction-pooling
 * PgBouncer. So every waiter also polls within a bound, and a reconnection tells every listener to
 * look again (`resync`), since notifications sent meanwhile are gone.
 */
import { giveBack, run } from "./calls.js";
import type { PgPool, PgPoolClient, WakeUp } from "./types.js";

type Listener = (wake: WakeUp) => void;

const KINDS: Record<string, "released" | "leader" | "latch"> = { r: "released", l: "leader", c: "latch" };

export class Wakeups {
  private readonly byName = new Map<string, Set<Listener>>();
  private client: PgPoolClient | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private retry: ReturnType<typeof setTimeout> | undefined;
  /** Connections made so far (the first, then each reconnection). */
  connections = 0;

  constructor(
    private readonly pool: PgPool,
    private readonly channel: string,
    private readonly boundMs: number,
    private readonly ready: () => Promise<void>,
  ) {}

  /** Whether the LISTEN connection is up now (wake-ups may be missed while it is not). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Calls `listener` on each wake-up of `name` (and on every resync) until the returned function is called. */
  listen(name: string, listener: Listener): () => void {
    let set = this.byName.get(name);
    if (!set) this.byName.set(name, (set = new Set()));
    set.add(listener);
    void this.connect();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byName.get(name) === set) this.byName.delete(name);
    };
  }

  /** Resolves once the LISTEN connection is up, or when it could not be made within the bound (wake-ups then fall back to polling). */
  connect(): Promise<void> {
    if (this.closed || this.client) return Promise.resolve();
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    let client: PgPoolClient | undefined;
    try {
      await this.ready();
      const pending = this.pool.connect();
      const timer = new Promise<undefined>((r) => setTimeout(() => r(undefined), this.boundMs).unref());
      client = await Promise.race([pending, timer]);
      if (client === undefined) {
        void pending.then((c) => c.release(true), () => {});
        throw new Error("no connection within the bound");
      }
      const c = client;
      c.on("error", () => this.lost(c));
      c.on("end", () => this.lost(c));
      c.on("notification", (m) => this.deliver(m.payload));
      await run(c, `LISTEN "${this.channel}"`, [], performance.now() + this.boundMs, "listen", this.channel, c);
      if (this.closed) {
        c.release(true);
        return;
      }
      this.client = c;
      this.connections++;
      // Anything sent before the LISTEN took effect is lost: have everyone look.
      this.broadcast({ kind: "resync" });
    } catch {
      // run() ends a client whose LISTEN got no answer in time: giveBack tolerates a second release.
      if (client) giveBack(client, true);
      this.schedule();
    }
  }

  private lost(c: PgPoolClient): void {
    if (this.client !== c) return;
    this.client = undefined;
    try {
      c.release(true);
    } catch {
      // already given back
    }
    this.broadcast({ kind: "resync" });
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.retry || this.byName.size === 0) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, Math.min(1_000, this.boundMs));
    this.retry.unref();
  }

  private deliver(payload: string | undefined): void {
    if (!payload || payload.length < 3 || payload[1] !== ":") return;
    const kind = KINDS[payload[0]!];
    if (!kind) return;
    let wake: Exclude<WakeUp, { kind: "resync" }>;
    if (kind === "released") {
      // 'r:<head>\x1f<name>': ids hold no control characters, names may.
      const cut = payload.indexOf("\x1f", 2);
      if (cut < 0) return;
      wake = { kind, name: payload.slice(cut + 1), head: cut > 2 ? payload.slice(2, cut) : null };
    } else {
      wake = { kind, name: payload.slice(2) };
    }
    for (const l of [...(this.byName.get(wake.name) ?? [])]) l(wake);
  }

  private broadcast(wake: WakeUp): void {
    for (const set of this.byName.values()) for (const l of [...set]) l(wake);
  }

  /** Ends the LISTEN connection (given back to the pool ended: it carries a LISTEN). */
  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const c = this.client;
    this.client = undefined;
    if (c) {
      c.removeAllListeners("notification");
      c.release(true);
    }
    this.byName.clear();
  }
}
