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
