/**
 * `surelock list [PATTERN]`: every lock held under the prefix, found with SCAN (never KEYS, which
 * blocks the server) on every primary. PATTERN is a Redis glob on the user's key.
 */
import type { Redis } from "ioredis";
import { KeySpace } from "../keys.js";
import { perNode, type Deployment, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import { escapeGlob, globToRegExp } from "./glob.js";
import { readLockState, type LockState } from "./lock-state.js";
import { exitCodeOf, withReachable } from "./one-shot.js";
import { note, plural, print, printJson, quote, table } from "./output.js";

export interface ListOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  /** Redis glob on the user's key. */
  readonly pattern: string;
  readonly json: boolean;
}

/** What `list` reports about one lock (an election's leader, a countdown latch). */
export type LockKind = "mutex" | "rw-write" | "rw-read" | "semaphore" | "election" | "latch";

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
  /** Latches only: count downs left, of `count`. */
  readonly left?: number;
  readonly count?: number;
}

const SCAN_COUNT = 1_000;
const BATCH = 500;

export function list(o: ListOptions): Promise<number> {
  return withReachable(o.addresses, async (reached) => {
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
        r.kind === "latch" ? `${r.left ?? "?"} of ${r.count ?? "?"} left` : r.owner ?? plural(r.holders, r.kind === "rw-read" ? "reader" : "holder"),
        r.fencingToken ?? "-",
        r.pttlMs >= 0 ? formatDuration(r.pttlMs) : "no expiry",
        ...(showNode ? [r.node] : []),
      ])));
    }
    return exitCodeOf(outcomes, " (its locks are missing from this list)");
  });
}

async function listNode(d: Deployment, server: Redis, keys: KeySpace, match: string, matcher: RegExp): Promise<ListRow[]> {
  const node = d.cluster ? `${server.options.host ?? "?"}:${server.options.port ?? "?"}` : d.name;
  const found = new Set<string>();
  let cursor = "0";
  do {
    const [next, names] = await server.scan(cursor, "MATCH", match, "COUNT", SCAN_COUNT);
    cursor = next;
    for (const name of names) {
      const lock = parseName(keys, name);
      if (lock && matcher.test(lock.key)) found.add(lock.key);
    }
  } while (cursor !== "0");

  const rows: ListRow[] = [];
  const all = [...found];
  for (let i = 0; i < all.length; i += BATCH) {
    // One inspect.lua call per key, in batches sent together; each reads every kind of lock of its key.
    const states = await Promise.all(all.slice(i, i + BATCH).map(async (key) => ({ key, state: await readLockState(d.client, keys, key) })));
    for (const { key, state } of states) rows.push(...rowsOf(node, keys, key, state));
  }
  return rows;
}

/** The rows of one key: each kind of lock it is held as (released between SCAN and now: none). */
function rowsOf(node: string, keys: KeySpace, key: string, state: LockState): ListRow[] {
  const rows: ListRow[] = [];
  const holder = state.mutex?.holder;
  if (holder) {
    rows.push({ node, key, kind: "mutex", owner: holder.owner, holders: 1, fencingToken: holder.fencingToken, pttlMs: holder.pttlMs, redisKey: keys.exclusive(key).lock });
  }
  const rw = keys.shared(key, "rw");
  const writer = state.rw?.holders.find((h) => h.mode === "w");
  if (writer) {
    rows.push({ node, key, kind: "rw-write", owner: writer.owner, holders: 1, fencingToken: writer.fencingToken, pttlMs: writer.expiresInMs, redisKey: rw.holders });
  }
  const readers = state.rw?.holders.filter((h) => h.mode === "r") ?? [];
  if (readers.length > 0) {
    rows.push({ node, key, kind: "rw-read", owner: null, holders: readers.length, fencingToken: null, pttlMs: Math.max(...readers.map((h) => h.expiresInMs)), redisKey: rw.holders });
  }
  const permits = state.semaphore?.holders ?? [];
  if (permits.length > 0) {
    rows.push({ node, key, kind: "semaphore", owner: null, holders: permits.length, fencingToken: null, pttlMs: Math.max(...permits.map((h) => h.expiresInMs)), redisKey: keys.shared(key, "sem").holders });
  }
  const leader = state.election?.holder;
  if (leader) {
    rows.push({ node, key, kind: "election", owner: leader.owner, holders: 1, fencingToken: leader.fencingToken, pttlMs: leader.pttlMs, redisKey: keys.exclusive(key, "election").lock });
  }
  const latch = state.latch;
  if (latch) {
    rows.push({ node, key, kind: "latch", owner: null, holders: 0, fencingToken: null, pttlMs: latch.pttlMs, redisKey: keys.latch(key).state, left: latch.left, count: latch.count });
  }
  return rows;
}

/** Where a key space keeps what `list` reports: the part of each kind's name that marks it. */
const SPACES = {
  mutex: { head: "{", part: "lock" },
  rw: { head: "rw:{", part: "holders" },
  sem: { head: "sem:{", part: "holders" },
  election: { head: "election:{", part: "lock" },
  latch: { head: "latch:{", part: "state" },
} as const;
type Space = keyof typeof SPACES;

/**
 * The user key of a Redis key name, if it is where this key space keeps holds: `<p>:{k}:lock`
 * (mutex), `<p>:rw:{k}:holders`, `<p>:sem:{k}:holders`, `<p>:election:{k}:lock`, or a latch's
 * `<p>:latch:{k}:state`.
 */
export function parseName(keys: KeySpace, name: string): { readonly key: string; readonly space: Space } | undefined {
  const head = `${keys.prefix}:`;
  if (!name.startsWith(head)) return undefined;
  const rest = name.slice(head.length);
  const space = (Object.keys(SPACES) as Space[]).find((s) => rest.startsWith(SPACES[s].head));
  if (!space) return undefined;
  const part = SPACES[space].part;
  if (!name.endsWith(`}:${part}`)) return undefined;
  const key = rest.slice(rest.indexOf("{") + 1, rest.length - `}:${part}`.length);
  if (key === "") return undefined;
  // The name must be exactly what the library builds for this key and kind.
  const built = space === "mutex" ? keys.exclusive(key).lock : space === "election" ? keys.exclusive(key, "election").lock
    : space === "latch" ? keys.latch(key).state : keys.shared(key, space).holders;
  return built === name ? { key, space } : undefined;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
