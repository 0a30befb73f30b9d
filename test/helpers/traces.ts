/**
 * What surelock left in Redis under a prefix — holds, tickets, writer marks, keys without a TTL —
 * read through anything that answers commands (a topology helper's server, or a MemoryRedis).
 * Has no client library behind it, so the fast tier can load it without ioredis.
 */

/** Something that answers Redis commands: a RedisServer of the topology helper, or a MemoryRedis. */
export interface Inspectable {
  command(...args: (string | number)[]): Promise<unknown>;
}

/** The adapter-shaped MemoryRedis as an Inspectable. */
export const inspectable = (adapter: { command(args: readonly (string | number)[]): Promise<unknown> }): Inspectable => ({
  command: (...args) => adapter.command(args),
});

/** What of one surelock key is still there that should not be (empty when it is clean). */
async function traceOf(redis: Inspectable, key: string): Promise<string[]> {
  const type = String(await redis.command("TYPE", key));
  const found: string[] = [];
  const pttl = Number(await redis.command("PTTL", key));
  if (pttl === -1) found.push(`${key} has no TTL`);
  if (type === "list") {
    const n = Number(await redis.command("LLEN", key));
    if (n > 0) found.push(`${key}: ${n} ticket(s) still in line`);
  } else if (type === "zset" && !key.endsWith(":released")) {
    // (A mutex's `released` zset holds tombstones of entries given back: expected, and short-lived.)
    const live = (await redis.command("ZRANGEBYSCORE", key, "(0", "+inf")) as string[];
    if (live.length > 0) found.push(`${key}: ${live.length} hold(s) still live`);
  } else if (type === "hash") {
    const fields = ((await redis.command("HKEYS", key)) as string[]).sort();
    if (key.endsWith(":tickets") && fields.length > 0) found.push(`${key}: tickets ${fields.join(",")}`);
    if (key.endsWith(":lock") && fields.includes("o")) found.push(`${key}: still held (${fields.join(",")})`);
    if (key.endsWith(":state")) {
      if (fields.includes("w")) found.push(`${key}: writer mark left`);
      const holds = fields.filter((f) => f.startsWith("s:"));
      if (holds.length > 0) found.push(`${key}: hold record(s) ${holds.join(",")}`);
    }
    if (key.endsWith(":entries") && fields.length > 0) found.push(`${key}: writer entries ${fields.join(",")}`);
  }
  return found;
}

/** Every trace surelock left under `prefix`. */
export async function traces(redis: Inspectable, prefix = "surelock"): Promise<string[]> {
  const keys = (await redis.command("KEYS", `${prefix}:*`)) as string[];
  return (await Promise.all(keys.map((k) => traceOf(redis, k)))).flat();
}
