/**
 * The PostgreSQL store: the lock protocol as PL/pgSQL functions (src/postgres/sql/), called over
 * the user's `pg` Pool, each call in its own short transaction (never the caller's), each within
 * the store's bound. Leases are judged on the database's clock (clock_timestamp()); the caller
 * learns how long its lease has left and counts that down on its own monotonic clock from before
 * the call was sent, so the client's clock only ever shortens a lease. A call whose answer was
 * lost is made again once: every function answers a replay from our own rows.
 */
import { ConnectionError, FencedError, InvalidArgumentError, SchemaError, UnsupportedError } from "../errors.js";
import { checkOptions, checkOwner, checkPositiveInt, checkTtl, MAX_DURATION_MS, MAX_PERMITS } from "../validate.js";
import { checkout, classify, giveBack, once, run, sqlState, unanswered } from "./calls.js";
import { install, installedVersion, names, SCHEMA_NAME, SQL_VERSION } from "./schema.js";
import type {
  AcquireRequest, AcquireResult, CountDownResult, HoldCheck, Inspection, LatchState, LeaderState, PgMode, PgPool, PgQueryable,
  ReleaseResult, RenewItem, RenewResult, StoreCapabilities, WakeUp,
} from "./types.js";
import { Wakeups } from "./wakeups.js";

/** Longest name (lock, resource, latch), in bytes of UTF-8. */
export const MAX_NAME_BYTES = 1024;
/** Longest id (hold, entry, latch count-down), in bytes of UTF-8. */
const MAX_ID_BYTES = 256;

export interface PostgresStoreOptions {
  /** The user's node-postgres Pool; the store never ends it. */
  readonly pool: PgPool;
  /** The schema the store's tables and functions live in (default `surelock`). */
  readonly schema?: string;
  /** Every call's bound, ms (default 5000): it answers or fails with a typed error within it. */
  readonly callTimeoutMs?: number;
  /** The poll a waiter falls back to when no wake-up comes, ms (default 1000). */
  readonly pollMs?: number;
  /** Create or update the schema on first use (default true); false: `migrate()` must have been run. */
  readonly createSchema?: boolean;
}

const OPTIONS = ["pool", "schema", "callTimeoutMs", "pollMs", "createSchema"] as const;

function checkName(argument: string, value: unknown, maxBytes = MAX_NAME_BYTES): string {
  // PostgreSQL's text cannot hold NUL; a lone surrogate would not round-trip.
  if (typeof value !== "string" || value.length === 0 || !value.isWellFormed() || value.includes("\u0000") || Buffer.byteLength(value) > maxBytes) {
    throw new InvalidArgumentError(argument, value, `a non-empty, well-formed Unicode string without NUL, of at most ${maxBytes} bytes in UTF-8`);
  }
  return value;
}

function checkNames(argument: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 1000) throw new InvalidArgumentError(argument, value, "an array of 1 to 1000 names");
  const list = value.map((v, i) => checkName(`${argument}[${i}]`, v));
  if (new Set(list).size !== list.length) throw new InvalidArgumentError(argument, value, "distinct names");
  return list;
}

function checkToken(argument: string, value: unknown): bigint {
  if (typeof value !== "bigint" || value < 1n || value > 9223372036854775807n) throw new InvalidArgumentError(argument, value, "a fencing token: a bigint from 1 to 2^63-1");
  return value;
}

function checkDuration(argument: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > MAX_DURATION_MS) {
    throw new InvalidArgumentError(argument, value, `an integer number of ms from ${min} to ${MAX_DURATION_MS}`);
  }
  return value;
}

/** A hold, entry or ticket id: no control characters (a wake-up's payload ends the head ticket with \x1f). */
function checkId(argument: string, value: unknown): string {
  checkName(argument, value, MAX_ID_BYTES);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value as string)) throw new InvalidArgumentError(argument, value, "an id without control characters");
  return value as string;
}

const num = (v: unknown): number => Number(v);
const big = (v: unknown): bigint => BigInt(v as string);

/** A waiter's watch on one name's wake-ups (see `PostgresStore.watch`). */
export interface WakeWatch {
  /** Resolves true at the first wake-up since the previous call, false after `ms` (at most the poll bound) or on abort. */
  next(ms: number, signal?: AbortSignal): Promise<boolean>;
  /** Stops watching. */
  close(): void;
}

/** A fencing guard for one resource, to check inside the user's own transaction. */
export interface PostgresGuard {
  /**
   * Records `token` for the resource in the transaction `client` is in, and resolves when no newer
   * token was recorded; otherwise rejects with FencedError (`ERR_SURELOCK_FENCED`), and the
   * transaction is aborted: roll it back. Racing transactions on one resource are ordered by the
   * resource's row lock: the later waits for the earlier to end.
   */
  check(client: PgQueryable, token: bigint): Promise<void>;
}

export class PostgresStore {
  readonly schema: string;
  readonly capabilities: StoreCapabilities;
  private readonly pool: PgPool;
  private readonly callTimeoutMs: number;
  private readonly pollMs: number;
  private readonly createSchema: boolean;
  private readonly q: string;
  private installed: Promise<void> | undefined;
  private readonly wakeups: Wakeups;
  /** Statements sent so far (the bench's statements per operation). */
  statements = 0;

  constructor(options: PostgresStoreOptions) {
    const o = checkOptions<PostgresStoreOptions>("options", options, OPTIONS);
    const pool = o.pool as unknown;
    if (typeof pool !== "object" || pool === null || typeof (pool as PgPool).connect !== "function") {
      throw new InvalidArgumentError("options.pool", pool, "a node-postgres Pool (an object with connect())");
    }
    this.pool = pool as PgPool;
    const schema = o.schema ?? "surelock";
    if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
      throw new InvalidArgumentError("options.schema", schema, "a schema name: lower-case letters, digits and _, starting with a letter or _, at most 40 characters");
    }
    this.schema = schema;
    this.q = names(schema).quoted;
    this.callTimeoutMs = o.callTimeoutMs === undefined ? 5_000 : checkDuration("options.callTimeoutMs", o.callTimeoutMs, 10);
    this.pollMs = o.pollMs === undefined ? 1_000 : checkDuration("options.pollMs", o.pollMs, 10);
    if (o.createSchema !== undefined && typeof o.createSchema !== "boolean") throw new InvalidArgumentError("options.createSchema", o.createSchema, "a boolean");
    this.createSchema = o.createSchema ?? true;
    this.capabilities = {
      store: "postgres", fencing: "transaction", clock: "database", reentry: true, fair: true, semaphore: true, readWrite: true,
      multi: true, election: true, latch: true, wakeups: "notify+poll", maxNameBytes: MAX_NAME_BYTES,
      callTimeoutMs: this.callTimeoutMs, pollMs: this.pollMs,
    };
    this.wakeups = new Wakeups(this.pool, names(schema).channel, this.callTimeoutMs, () => this.ready());
  }

  /** Makes sure the schema is installed at this build's version (once per store; again after a failure). */
  ready(deadline = performance.now() + this.callTimeoutMs): Promise<void> {
    this.installed ??= this.prepare(deadline).catch((e: unknown) => {
      this.installed = undefined;
      throw e;
    });
    return this.installed;
  }

  private async prepare(deadline: number): Promise<void> {
    const client = await checkout(this.pool, deadline, "schema check", this.schema);
    let broken = false;
    try {
      // A commit acknowledged before it is durable is a lease a crash can hand out twice.
      this.statements += 2;
      const durable = await run(client, "SELECT current_setting('synchronous_commit') AS mode", [], deadline, "settings check", this.schema, client);
      if (durable.rows[0]?.mode === "off") {
        throw new UnsupportedError(`PostgreSQL store: synchronous_commit is off for this pool's connections, so a crash can lose a lease it acknowledged; turn it on for the store's role (ALTER ROLE … SET synchronous_commit = on)`);
      }
      const version = await installedVersion(client, this.schema, deadline);
      if (version === SQL_VERSION) return;
      if (!this.createSchema) {
        throw new SchemaError(this.schema, version === null ? "not installed (createSchema is false: run migrate)" : `installed at version ${version}, this build needs ${SQL_VERSION} (run migrate)`);
      }
      this.statements += 5;
      await install(client, this.schema, deadline);
    } catch (e) {
      broken = e instanceof ConnectionError;
      throw e;
    } finally {
      if (!broken) giveBack(client);
    }
  }

  /** Installs or updates the schema now (what `surelock migrate --postgres` runs), whatever `createSchema` says. */
  async migrate(): Promise<void> {
    const deadline = performance.now() + this.callTimeoutMs;
    const client = await checkout(this.pool, deadline, "migrate", this.schema);
    let broken = false;
    try {
      await install(client, this.schema, deadline);
      this.installed = Promise.resolve();
    } catch (e) {
      broken = e instanceof ConnectionError;
      throw e;
    } finally {
      if (!broken) giveBack(client);
    }
  }

  /** One function call in its own transaction; made again once when its answer was lost, if time is left. */
  private async call(what: string, text: string, values: unknown[], replayable: boolean): Promise<{ rows: readonly Record<string, unknown>[]; sent: number }> {
    const deadline = performance.now() + this.callTimeoutMs;
    await this.ready(deadline);
    for (let attempt = 0; ; attempt++) {
      const sent = performance.now();
      try {
        this.statements++;
        const r = await once(this.pool, text, values, deadline, what, this.schema, `surelock.${this.schema}.${what}`);
        return { rows: r.rows, sent };
      } catch (e) {
        if (!replayable || attempt > 0 || !unanswered(e) || performance.now() >= deadline) throw e;
      }
    }
  }

  /** One attempt: founds or enters a hold, or says why not (and takes a ticket when `ticketMs` > 0). */
  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const r = checkOptions<AcquireRequest>("request", request, ["names", "hold", "owner", "mode", "permits", "limit", "ttlMs", "reentry", "entry", "ticketMs"]);
    const given = checkNames("request.names", r.names);
    const hold = checkId("request.hold", r.hold);
    const owner = checkOwner("request.owner", r.owner);
    const mode = r.mode as unknown;
    if (mode !== "x" && mode !== "r" && mode !== "w" && mode !== "s") throw new InvalidArgumentError("request.mode", mode, `one of "x", "r", "w", "s"`);
    if (given.length > 1 && mode !== "x") throw new InvalidArgumentError("request.mode", mode, `"x" for several names`);
    const limit = mode === "s" ? checkPositiveInt("request.limit", r.limit, MAX_PERMITS) : 1;
    const permits = r.permits === undefined ? 1 : checkPositiveInt("request.permits", r.permits, MAX_PERMITS);
    if (mode !== "s" && permits !== 1) throw new InvalidArgumentError("request.permits", permits, "1 unless mode is \"s\"");
    if (permits > limit) throw new InvalidArgumentError("request.permits", permits, `at most the limit (${limit})`);
    const ttlMs = checkTtl("request.ttlMs", r.ttlMs);
    const reentry = r.reentry as unknown as { kind?: unknown; hold?: unknown } | undefined;
    if (typeof reentry !== "object" || reentry === null || !["fresh", "hold", "owner"].includes(reentry.kind as string)) {
      throw new InvalidArgumentError("request.reentry", reentry, `{ kind: "fresh" }, { kind: "hold", hold }, or { kind: "owner" }`);
    }
    const join = reentry.kind === "hold" ? checkId("request.reentry.hold", reentry.hold) : "";
    const entry = r.entry === undefined ? hold : checkId("request.entry", r.entry);
    const ticketMs = r.ticketMs === undefined || r.ticketMs === 0 ? 0 : checkTtl("request.ticketMs", r.ticketMs);
    // Every caller takes a multi-lock's rows in one order (sorted by code unit), so two never deadlock.
    const sorted = [...given].sort();
    const { rows, sent } = await this.call(
      "acquire",
      `SELECT * FROM ${this.q}.acquire($1::text[], $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [sorted, hold, owner, mode, permits, limit, ttlMs, reentry.kind, join, entry, ticketMs],
      true,
    );
    const row = rows[0]!;
    const status = row.status as string;
    if (status === "founded" || status === "entered") {
      const bySorted = (row.tokens as string[]).map(big);
      const tokens = given.map((n) => bySorted[sorted.indexOf(n)]!);
      const pttlMs = num(row.pttl_ms);
      return { status, hold: row.hold as string, tokens, token: tokens[0]!, pttlMs, validUntil: sent + pttlMs };
    }
    if (status === "busy") return { status, position: num(row.position), waitMs: row.wait_ms === null ? this.pollMs : Math.max(0, num(row.wait_ms)) };
    if (status === "conflict") return { status, limit: num(row.lim) };
    return { status: "gone" };
  }

  /** Gives the entry `entry` (default: the hold's first) of `hold` on `names` back. */
  async release(namesOf: readonly string[], hold: string, entry?: string): Promise<ReleaseResult> {
    const list = checkNames("names", namesOf);
    checkId("hold", hold);
    const e = entry === undefined ? hold : checkId("entry", entry);
    const { rows } = await this.call("release", `SELECT * FROM ${this.q}.release($1::text[], $2, $3)`, [[...list].sort(), hold, e], true);
    return { status: rows[0]!.status as ReleaseResult["status"], remaining: num(rows[0]!.remaining) };
  }

  /** Ends `hold` on `names` whatever its entries; true when it was live. */
  async resign(namesOf: readonly string[], hold: string): Promise<boolean> {
    const list = checkNames("names", namesOf);
    checkId("hold", hold);
    const { rows } = await this.call("resign", `SELECT ${this.q}.resign($1::text[], $2) AS ended`, [[...list].sort(), hold], true);
    return rows[0]!.ended === true;
  }

  /** The waiter `ticket` leaves the queues of `names` (it gave up or timed out). */
  async leave(namesOf: readonly string[], ticket: string): Promise<void> {
    const list = checkNames("names", namesOf);
    checkId("ticket", ticket);
    await this.call("leave", `SELECT ${this.q}.leave($1::text[], $2)`, [list, ticket], true);
  }

  /** One statement for every lease and ticket of an instance: each renewed for its ttl if still live. */
  async renew(items: readonly RenewItem[]): Promise<RenewResult[]> {
    if (!Array.isArray(items)) throw new InvalidArgumentError("items", items, "an array of renewal items");
    const kinds: string[] = [], ns: string[] = [], ids: string[] = [], ttls: number[] = [], owner: number[] = [];
    items.forEach((item, i) => {
      if (item?.kind !== "hold" && item?.kind !== "ticket") throw new InvalidArgumentError(`items[${i}].kind`, item?.kind, `"hold" or "ticket"`);
      const list = checkNames(`items[${i}].names`, item.names);
      const id = checkId(`items[${i}].id`, item.id);
      const ttl = checkTtl(`items[${i}].ttlMs`, item.ttlMs);
      for (const n of list) {
        kinds.push(item.kind === "hold" ? "h" : "t");
        ns.push(n);
        ids.push(id);
        ttls.push(ttl);
        owner.push(i);
      }
    });
    if (items.length === 0) return [];
    const { rows, sent } = await this.call("renew", `SELECT * FROM ${this.q}.renew($1::"char"[], $2::text[], $3::text[], $4::bigint[])`, [kinds, ns, ids, ttls], true);
    const out = items.map((item) => ({ live: true, pttlMs: item.ttlMs }));
    for (const row of rows) {
      const i = owner[num(row.i) - 1]!;
      const o = out[i]!;
      o.live &&= row.live === true;
      o.pttlMs = Math.min(o.pttlMs, num(row.pttl_ms));
    }
    return out.map((o) => ({ live: o.live, pttlMs: o.live ? o.pttlMs : 0, validUntil: o.live ? sent + o.pttlMs : sent }));
  }

  /** Renews one hold for `ttlMs` (a lease's `extend`). */
  async extend(namesOf: readonly string[], hold: string, ttlMs: number): Promise<RenewResult> {
    return (await this.renew([{ kind: "hold", names: namesOf, id: hold, ttlMs }]))[0]!;
  }

  /** Whether `hold` is live on every one of `names` now; its time left and tokens. */
  async check(namesOf: readonly string[], hold: string): Promise<HoldCheck> {
    const list = checkNames("names", namesOf);
    checkId("hold", hold);
    const sorted = [...list].sort();
    const { rows, sent } = await this.call("check", `SELECT * FROM ${this.q}.check_hold($1::text[], $2)`, [sorted, hold], true);
    const row = rows[0]!;
    const live = row.live === true;
    const bySorted = live ? (row.tokens as string[]).map(big) : [];
    const pttlMs = num(row.pttl_ms);
    return { live, pttlMs, validUntil: sent + pttlMs, tokens: live ? list.map((n) => bySorted[sorted.indexOf(n)]!) : [], entries: num(row.entries) };
  }

  /** An election's leader publishes `value`; false when `hold` is not the live leader of `name`. */
  async proclaim(name: string, hold: string, value: string): Promise<boolean> {
    checkName("name", name);
    checkId("hold", hold);
    if (typeof value !== "string" || value.includes("\u0000") || !value.isWellFormed()) throw new InvalidArgumentError("value", value, "a well-formed string without NUL");
    const { rows } = await this.call("proclaim", `SELECT ${this.q}.proclaim($1, $2, $3) AS ok`, [name, hold, value], true);
    return rows[0]!.ok === true;
  }

  /** The live leader of `name`, or null. */
  async readLeader(name: string): Promise<LeaderState | null> {
    checkName("name", name);
    const { rows } = await this.call("read leader", `SELECT * FROM ${this.q}.read_leader($1)`, [name], true);
    const row = rows[0];
    if (!row) return null;
    return { hold: row.hold as string, owner: row.owner as string, token: big(row.token), value: (row.value as string | null) ?? null, pttlMs: num(row.pttl_ms) };
  }

  /** One count down of the latch `name` by `id` (counted once however often it is sent). */
  async countDown(name: string, id: string, count: number, ttlMs: number): Promise<CountDownResult> {
    checkName("name", name);
    checkId("id", id);
    checkPositiveInt("count", count, MAX_PERMITS);
    checkTtl("ttlMs", ttlMs);
    const { rows } = await this.call("count down", `SELECT * FROM ${this.q}.count_down($1, $2, $3, $4)`, [name, id, count, ttlMs], true);
    const s = num(rows[0]!.status);
    return { status: s === 1 ? "counted" : s === 2 ? "replay" : "conflict", remaining: num(rows[0]!.remaining) };
  }

  /** The live latch `name`, or null. */
  async readLatch(name: string): Promise<LatchState | null> {
    checkName("name", name);
    const { rows } = await this.call("read latch", `SELECT * FROM ${this.q}.read_latch($1)`, [name], true);
    const row = rows[0];
    return row ? { count: num(row.count), remaining: num(row.remaining) } : null;
  }

  /** Everything about `name` (for the CLI and tests). */
  async inspect(name: string): Promise<Inspection> {
    checkName("name", name);
    const { rows } = await this.call("inspect", `SELECT ${this.q}.inspect($1) AS state`, [name], true);
    const s = rows[0]!.state as {
      counter: number; limit: number | null;
      holds: { hold: string; owner: string; mode: PgMode; permits: number; token: string; entries: number; value: string | null; pttl: number }[];
      tickets: { ticket: string; mode: PgMode; permits: number; pttl: number }[];
    };
    return {
      counter: BigInt(s.counter),
      limit: s.limit,
      holds: s.holds.map((h) => ({ hold: h.hold, owner: h.owner, mode: h.mode, permits: h.permits, token: BigInt(h.token), entries: h.entries, value: h.value, pttlMs: h.pttl })),
      tickets: s.tickets.map((t) => ({ ticket: t.ticket, mode: t.mode, permits: t.permits, pttlMs: t.pttl })),
    };
  }

  /** Ends every hold and ticket of `name` (an operator's last resort); how many live holds ended. */
  async forceRelease(name: string): Promise<number> {
    checkName("name", name);
    const { rows } = await this.call("force release", `SELECT ${this.q}.force_release($1) AS ended`, [name], true);
    return num(rows[0]!.ended);
  }

  /** Calls `listener` on each wake-up of `name` (and on `resync`); returns the function that stops it. */
  listen(name: string, listener: (wake: WakeUp) => void): () => void {
    checkName("name", name);
    if (typeof listener !== "function") throw new InvalidArgumentError("listener", listener, "a function");
    return this.wakeups.listen(name, listener);
  }

  /** Resolves once the store listens for wake-ups (or could not within its bound: waiters then poll). */
  listening(): Promise<boolean> {
    return this.wakeups.connect().then(() => this.wakeups.listening);
  }

  /**
   * Watches `name` for wake-ups from now on: `next(ms)` resolves true at the first wake-up since the
   * previous `next` (one that came in between counts: no wake-up is lost between an attempt and the
   * wait after it), false after `ms` (at most the poll bound) or on abort. What a waiter opens before
   * its first attempt and closes when it is done. With its `ticket`, a release that names another
   * waiter as first in line does not wake it.
   */
  watch(name: string, ticket?: string): WakeWatch {
    checkName("name", name);
    if (ticket !== undefined) checkId("ticket", ticket);
    let woken = false;
    let wake: (() => void) | undefined;
    const stop = this.wakeups.listen(name, (w) => {
      // Another waiter is first in line: only it can go now (the poll covers a head that died).
      if (ticket !== undefined && w.kind === "released" && w.head !== null && w.head !== ticket) return;
      woken = true;
      wake?.();
    });
    return {
      next: (ms: number, signal?: AbortSignal): Promise<boolean> => {
        if (woken || signal?.aborted) {
          const was = woken;
          woken = false;
          return Promise.resolve(was);
        }
        return new Promise<boolean>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            wake = undefined;
            const was = woken;
            woken = false;
            resolve(was);
          };
          const timer = setTimeout(done, Math.max(0, Math.min(ms, this.pollMs)));
          wake = done;
          signal?.addEventListener("abort", done, { once: true });
        });
      },
      close: stop,
    };
  }

  /** Waits for one wake-up of `name`, or `ms` (at most the poll bound); true on a wake-up. */
  async waitForWake(name: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    const w = this.watch(name);
    try {
      return await w.next(ms, signal);
    } finally {
      w.close();
    }
  }

  /** A fencing guard for `resource`, checked inside the user's own transaction. */
  guard(resource: string): PostgresGuard {
    checkName("resource", resource);
    return {
      check: async (client: PgQueryable, token: bigint): Promise<void> => {
        if (typeof client !== "object" || client === null || typeof (client as PgQueryable).query !== "function") {
          throw new InvalidArgumentError("client", client, "a pg client inside the caller's transaction (an object with query())");
        }
        checkToken("token", token);
        // The schema is made on a connection of the store's own, never in the user's transaction.
        await this.ready();
        this.statements++;
        try {
          await client.query({ text: `SELECT ${this.q}.fence($1, $2)`, values: [resource, token.toString()] });
        } catch (e) {
          if (sqlState(e) === "SLF01") {
            const detail = (e as { detail?: unknown }).detail;
            throw new FencedError(resource, token, typeof detail === "string" && /^\d+$/.test(detail) ? BigInt(detail) : token + 1n, { cause: e });
          }
          throw classify(e, "fence check", this.schema);
        }
      },
    };
  }

  /** Stops listening for wake-ups; the pool is the user's and stays open. */
  close(): void {
    this.wakeups.close();
  }
}
