/**
 * `surelock list [PATTERN]`: every lock held under the prefix, found with SCAN (never KEYS, which
 * blocks the server) on every primary. PATTERN is a Redis glob on the user's key.
 */
import type { Redis } from "ioredis";
import { KeySpace } from "../keys.js";
import { CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, perNode, type Deployment, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import { ExitCode } from "./exit-codes.js";
import { escapeGlob, globToRegExp } from "./glob.js";
import { results, serverMs, toHolder, toShared } from "./lock-state.js";
import { note, plural, print, printJson, quote, table } from "./output.js";

export interface ListOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  /** Redis glob on the user's key. */
  readonly pattern: string;
  readonly json: boolean;
}

/** What `list` reports about one lock. */
export type LockKind = "mutex" | "rw-write" | "rw-read" | "semaphore";

/** One row of `list --json`. */
export interface ListRow {
  /** The server the key lives on (`host:port`). */
  readonly node: string;
  readonly key: string;
  readonly kind: LockKind;
  /** The holder of an exclusive lock; null for semaphores and readers (see `holders`). */
  readonly owner: string | null;
  /** How many hold it: 1 for an exclusive lock. */
  readonly holders: number;
  /** Exclusive locks only, as a decimal string. */
  readonly fencingToken: string | null;
  /** Time left before the Redis key expires. */
  readonly pttlMs: number;
  /** The Redis key itself. */
  readonly redisKey: string;
}

interface Found {
  readonly redisKey: string;
  readonly key: string;
  readonly kind: LockKind;
}

const SCAN_COUNT = 1_000;
const BATCH = 500;

export async function list(o: ListOptions): Promise<number> {
  const reached = await connectReachable(o.addresses, { reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  try {
    const keys = new KeySpace(o.prefix);
    const matcher = globToRegExp(o.pattern);
    // A server-side prefilter; every name is parsed and matched exactly below. Classes and
    // escapes could reach past the braces once embedded, so such patterns scan the whole prefix.
    const simple = !/[[\\]/.test(o.pattern);
    const match = `${escapeGlob(o.prefix)}:*${simple ? `{${o.pattern}}:*` : ""}`;
    const outcomes = await perNode(o.addresses, reached, "SCAN", async (d) =>
      (await Promise.all(d.primaries().map((server) => listNode(d, server, keys, match, matcher)))).flat());
    const rows = outcomes
      .flatMap((n) => n.value ?? [])
      .sort((a, b) => compare(a.key, b.key) || compare(a.kind, b.kind) || compare(a.node, b.node));
    if (o.json) {
      printJson(rows);
    } else if (rows.length === 0) {
      note(`no locks under prefix ${quote(o.prefix)}${o.pattern === "*" ? "" : ` matching ${quote(o.pattern)}`}`);
    } else {
      const showNode = o.addresses.length > 1 || reached.deployments.some((d) => d.cluster);
      const header = ["KEY", "KIND", "OWNER", "FENCING TOKEN", "EXPIRES IN", ...(showNode ? ["NODE"] : [])];
      print(...table(header, rows.map((r) => [
        r.key,
        r.kind,
        r.owner ?? plural(r.holders, r.kind === "rw-read" ? "reader" : "holder"),
        r.fencingToken ?? "-",
        r.pttlMs >= 0 ? formatDuration(r.pttlMs) : "no expiry",
        ...(showNode ? [r.node] : []),
      ])));
    }
    const failed = outcomes.filter((n) => n.error !== undefined);
    for (const n of failed) note(`${n.error as string} (its locks are missing from this list)`);
    return failed.length > 0 ? ExitCode.unavailable : ExitCode.ok;
  } finally {
    await disconnectAll(reached.deployments);
  }
}

async function listNode(d: Deployment, server: Redis, keys: KeySpace, match: string, matcher: RegExp): Promise<ListRow[]> {
  const node = d.cluster ? `${server.options.host ?? "?"}:${server.options.port ?? "?"}` : d.name;
  const found = new Map<string, Found>();
  let cursor = "0";
  do {
    const [next, names] = await server.scan(cursor, "MATCH", match, "COUNT", SCAN_COUNT);
    cursor = next;
    for (const name of names) {
      const lock = parseName(keys, name);
      if (lock && matcher.test(lock.key)) found.set(name, lock);
    }
  } while (cursor !== "0");

  const rows: ListRow[] = [];
  const all = [...found.values()];
  for (let i = 0; i < all.length; i += BATCH) rows.push(...(await describe(server, node, all.slice(i, i + BATCH))));
  return rows;
}

/** One pipeline for a batch of keys: the holder (hash) or the live members (zset), and the PTTL. */
async function describe(server: Redis, node: string, batch: readonly Found[]): Promise<ListRow[]> {
  const pipeline = server.pipeline().time();
  for (const f of batch) {
    if (f.kind === "mutex" || f.kind === "rw-write") pipeline.hmget(f.redisKey, "o", "n", "t");
    else pipeline.zrange(f.redisKey, 0, -1, "WITHSCORES");
    pipeline.pttl(f.redisKey);
  }
  const [time, ...replies] = results(await pipeline.exec(), 1 + batch.length * 2);
  const nowMs = serverMs(time);
  const rows: ListRow[] = [];
  batch.forEach((f, i) => {
    const reply = replies[2 * i];
    const pttlMs = Number(replies[2 * i + 1]);
    if (f.kind === "mutex" || f.kind === "rw-write") {
      const holder = toHolder(reply, pttlMs);
      // Released between SCAN and now.
      if (!holder) return;
      rows.push({ node, key: f.key, kind: f.kind, owner: holder.owner, holders: 1, fencingToken: holder.fencingToken, pttlMs, redisKey: f.redisKey });
    } else {
      const live = toShared(reply, nowMs);
      if (live.length === 0) return;
      rows.push({ node, key: f.key, kind: f.kind, owner: null, holders: live.length, fencingToken: null, pttlMs, redisKey: f.redisKey });
    }
  });
  return rows;
}

/**
 * The user key and kind of a Redis key name, if it is a holder key of this key space:
 * `<p>:{k}:lock` (mutex), `<p>:rw:{k}:lock` / `:shared` (write / read side), `<p>:sem:{k}:shared`.
 */
export function parseName(keys: KeySpace, name: string): Found | undefined {
  const head = `${keys.prefix}:`;
  if (!name.startsWith(head)) return undefined;
  const rest = name.slice(head.length);
  const space = rest.startsWith("{") ? "mutex" : rest.startsWith("rw:{") ? "rw" : rest.startsWith("sem:{") ? "sem" : undefined;
  if (!space) return undefined;
  const part = name.endsWith("}:lock") ? "lock" : name.endsWith("}:shared") ? "shared" : undefined;
  if (!part) return undefined;
  const open = rest.indexOf("{");
  const key = rest.slice(open + 1, rest.length - `}:${part}`.length);
  if (key === "") return undefined;
  const kind: LockKind | undefined =
    space === "mutex" ? (part === "lock" ? "mutex" : undefined)
    : space === "rw" ? (part === "lock" ? "rw-write" : "rw-read")
    : part === "shared" ? "semaphore" : undefined;
  if (!kind) return undefined;
  // The name must be exactly what the library builds for this key and kind.
  const names = keys.of(key, space);
  return names[part] === name ? { redisKey: name, key, kind } : undefined;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
