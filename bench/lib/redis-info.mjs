// What the server says about itself: version, per-command call counts (INFO commandstats counts
// the commands a script runs too, under their own names), and its CPU time.
export async function redisVersion(client) {
  const info = await client.info("server");
  return /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
}

export async function snapshot(client) {
  const [commandstats, cpu] = await Promise.all([client.info("commandstats"), client.info("cpu")]);
  const calls = {};
  const usec = {};
  for (const m of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    calls[m[1]] = Number(m[2]);
    usec[m[1]] = Number(m[3]);
  }
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(cpu)?.[1] ?? 0);
  return { calls, usec, cpuSeconds: field("used_cpu_sys") + field("used_cpu_user") };
}

/** Differences between two snapshots: calls per command (INFO and PING, which are the bench's own, left out) and CPU seconds. */
export function diff(before, after) {
  const calls = {};
  const usec = {};
  for (const [name, n] of Object.entries(after.calls)) {
    if (name === "info" || name === "ping") continue;
    const d = n - (before.calls[name] ?? 0);
    if (d > 0) {
      calls[name] = d;
      usec[name] = after.usec[name] - (before.usec[name] ?? 0);
    }
  }
  return { calls, usec, cpuSeconds: after.cpuSeconds - before.cpuSeconds };
}

/**
 * Starts recording every command that runs longer than `thresholdUs` (SLOWLOG, on the bench's own
 * server); the returned function stops, restores the settings and resolves with the entries:
 * [id, unix time, duration µs, [command, args...], ...].
 */
export async function recordSlowlog(client, thresholdUs) {
  const setting = async (name) => (await client.config("GET", name))[1];
  const saved = { threshold: await setting("slowlog-log-slower-than"), length: await setting("slowlog-max-len") };
  await client.config("SET", "slowlog-log-slower-than", String(thresholdUs));
  await client.config("SET", "slowlog-max-len", "100000");
  await client.slowlog("RESET");
  return async () => {
    const entries = await client.slowlog("GET", "100000");
    await client.config("SET", "slowlog-log-slower-than", saved.threshold);
    await client.config("SET", "slowlog-max-len", saved.length);
    await client.slowlog("RESET");
    return entries;
  };
}

/** As recordSlowlog, resolving with the script calls recorded: { count, maxUs, totalUs }. */
export async function recordSlowScripts(client, thresholdUs) {
  const stop = await recordSlowlog(client, thresholdUs);
  return async () => {
    const durationsUs = (await stop())
      .filter((e) => /^(eval(sha)?(_ro)?|fcall(_ro)?)$/i.test(String(e[3]?.[0] ?? "")))
      .map((e) => Number(e[2]));
    return { count: durationsUs.length, maxUs: durationsUs.reduce((a, b) => Math.max(a, b), 0), totalUs: durationsUs.reduce((a, b) => a + b, 0) };
  };
}

/** used_memory from INFO memory, bytes. */
export async function usedMemory(client) {
  const info = await client.info("memory");
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}
