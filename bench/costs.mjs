// Where an uncontended cycle's time goes, on the server and in the client:
//
//   npm run bench -- --costs                     everything below
//   npm run bench -- --costs --parts side,memory only some parts (side, memory, calls, split)
//
// 1. side: surelock beside the peers our users would pick instead (redis-semaphore's Mutex,
//    redlock 4) and a floor that is no safe lock at all (SET NX PX, then a bare DEL), each through
//    its bench adapter (bench/libs) on one redis-server of its own. Per uncontended cycle (6,000
//    acquire+release cycles, 10 loops at a time, each loop on its own key; the median of 3
//    interleaved rounds): the server's CPU (INFO cpu used_cpu_sys + used_cpu_user), the client's
//    (process.cpuUsage), the script calls and the commands, the ones run inside scripts included
//    (INFO commandstats). Then throughput with 1 loop and with 50 (median of 3 rounds).
// 2. memory: heap and RSS per held lease, 10,000 leases held by a child process (the W5 holder,
//    after a full GC), surelock beside redis-semaphore.
// 3. calls: Redis's own time (INFO commandstats usec) for a script call that does nothing, for the
//    helper functions an acquire script defines before its body runs, and for each command an
//    uncontended acquire + release runs inside its scripts, each as a script of 20 such calls.
//    Interleaved rounds on a dedicated server; the least µs per call of the rounds is kept (the
//    machine's noise only ever adds).
// 4. split: one cycle three ways at 1 and 50 concurrent loops: surelock through its API; surelock's
//    two scripts sent straight with ioredis (the same KEYS and ARGV, none of surelock's
//    JavaScript); and the floor (SET NX PX, then a compare-and-delete script). Per cycle: the
//    client's CPU and the server's, so the gap splits into what the scripts cost and what
//    surelock's client code adds.
//
// It reads the scripts from src/scripts/lua.generated.ts (run `npm run build` first; `npm run
// bench` does) and prints tables; it writes no results file.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { Surelock } from "../dist/index.js";
import { createAdapter } from "./libs/index.mjs";
import { TTL_MS } from "./libs/common.mjs";
import { forkChild } from "./lib/ipc.mjs";
import { diff, snapshot } from "./lib/redis-info.mjs";
import { fixed, int, table } from "./lib/report.mjs";
import { startRedis, stopAll } from "./lib/servers.mjs";

const generated = readFileSync(fileURLToPath(new URL("../src/scripts/lua.generated.ts", import.meta.url)), "utf8");

/** A generated script's text and SHA1, by its name in LUA (`acquire`, `release`). */
function script(name) {
  const m = new RegExp(`\\n  ${name}: \\{\\n    name: "[^"]+",\\n    sha: "(\\w+)",[\\s\\S]*?\\n    lua: ("(?:[^"\\\\]|\\\\.)*")(?: as string)?,\\n  \\},`).exec(generated);
  if (!m) throw new Error(`script ${name} not found in src/scripts/lua.generated.ts`);
  return { sha: m[1], lua: JSON.parse(m[2]) };
}


const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const SCRIPT_COMMANDS = ["evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"];

/** The floor of the side-by-side: SET NX PX, then a bare DEL. It may delete another's lock: no safe lock, a line. */
function bareFloor() {
  let clients = [];
  let n = 0;
  return {
    name: "floor (SET NX PX + DEL)",
    async setup([port]) {
      clients = [new Redis({ port, host: "127.0.0.1" })];
      await clients[0].ping();
    },
    async lock(key) {
      if ((await clients[0].set(key, `t${++n}`, "PX", TTL_MS, "NX")) !== "OK") throw new Error(`${key} is taken`);
      return () => clients[0].del(key);
    },
    async teardown() {
      await clients[0].quit().catch(() => clients[0].disconnect());
    },
  };
}

const SIDE = [
  { label: "surelock", entry: { module: "surelock.mjs", variant: "default" } },
  { label: "redis-semaphore", entry: { module: "redis-semaphore.mjs", variant: "default" } },
  { label: "redlock 4", entry: { module: "redlock4.mjs", variant: "default" } },
  { label: "floor (SET NX PX + DEL)", floor: true },
];

/** Runs `cycles` acquire+release cycles over `loops` concurrent loops, each on its own key. */
async function cycle(adapter, prefix, loops, cycles) {
  let left = cycles;
  await Promise.all(Array.from({ length: loops }, async (_, loop) => {
    const key = `${prefix}:${loop}`;
    while (left > 0) {
      left--;
      const release = await adapter.lock(key);
      await release();
    }
  }));
}

/** Part 1: surelock and the peers side by side, CPU, script calls and commands per uncontended cycle, and throughput. */
async function side(port, control) {
  const libs = [];
  for (const lib of SIDE) {
    const adapter = lib.floor ? bareFloor() : await createAdapter(lib.entry);
    await adapter.setup([port]);
    // Warm-up: scripts loaded, connections and JIT warm.
    await cycle(adapter, `costs:warm:${libs.length}`, 10, 600);
    libs.push({ ...lib, adapter, rounds: [], rates: { 1: [], 50: [] } });
  }
  const CYCLES = 6_000;
  for (let round = 0; round < 3; round++) {
    for (const [i, lib] of libs.entries()) {
      const before = await snapshot(control);
      const cpu = process.cpuUsage();
      await cycle(lib.adapter, `costs:side:${i}`, 10, CYCLES);
      const used = process.cpuUsage(cpu);
      const d = diff(before, await snapshot(control));
      const all = Object.values(d.calls).reduce((a, b) => a + b, 0);
      const scripts = SCRIPT_COMMANDS.reduce((n, c) => n + (d.calls[c] ?? 0), 0);
      lib.rounds.push({
        serverUs: (d.cpuSeconds * 1e6) / CYCLES,
        clientUs: (used.user + used.system) / CYCLES,
        scripts: scripts / CYCLES,
        commands: all / CYCLES,
      });
    }
  }
  for (let round = 0; round < 3; round++) {
    for (const loops of [1, 50]) {
      for (const [i, lib] of libs.entries()) {
        const cycles = loops === 1 ? 2_000 : 10_000;
        const startedAt = performance.now();
        await cycle(lib.adapter, `costs:rate:${i}`, loops, cycles);
        lib.rates[loops].push((cycles / (performance.now() - startedAt)) * 1000);
      }
    }
  }
  for (const lib of libs) await lib.adapter.teardown();
  const ref = libs.find((l) => l.label === "redis-semaphore");
  const m = (lib, f) => median(lib.rounds.map(f));
  const over = (lib, f) => `${fixed(f(lib) / f(ref), 2)}×`;
  const server = (lib) => m(lib, (r) => r.serverUs);
  const client = (lib) => m(lib, (r) => r.clientUs);
  const rate = (loops) => (lib) => median(lib.rates[loops]);
  return [
    `**Per uncontended cycle** (median of 3 interleaved rounds of ${int(CYCLES)} cycles, 10 loops at a time, each on its own key)`,
    "",
    table(
      ["library", "redis-server CPU µs", "over redis-semaphore's", "client CPU µs", "over redis-semaphore's", "script calls", "commands, inner ones included"],
      libs.map((lib) => [lib.label, fixed(server(lib), 1), over(lib, server), fixed(client(lib), 1), over(lib, client),
        fixed(m(lib, (r) => r.scripts), 2), fixed(m(lib, (r) => r.commands), 2)]),
    ),
    "",
    "**Uncontended throughput** (cycles/s, median of 3 interleaved rounds of 2,000 cycles with 1 loop, 10,000 with 50)",
    "",
    table(
      ["library", "1 loop", "over redis-semaphore's", "50 loops", "over redis-semaphore's"],
      libs.map((lib) => [lib.label, int(rate(1)(lib)), over(lib, rate(1)), int(rate(50)(lib)), over(lib, rate(50))]),
    ),
  ].join("\n");
}

/** Part 2: heap and RSS per held lease, 10,000 leases held by a child process (the W5 holder). */
async function memory(port, control) {
  const LEASES = 10_000;
  const rows = [];
  // surelock twice: as W5 holds (each lease's signal read, with a listener on it), and with the
  // signal never read (it is made on first use), which is what a lease itself costs.
  const holders = [
    { label: "surelock (signal read, one listener)", entry: SIDE[0].entry, watchLoss: true },
    { label: "surelock (signal never read)", entry: SIDE[0].entry, watchLoss: false },
    { label: "redis-semaphore (onLockLost callback)", entry: SIDE[1].entry, watchLoss: true },
  ];
  for (const lib of holders) {
    const child = forkChild("w5-holder.mjs", ["--expose-gc"]);
    try {
      child.send({ entry: lib.entry, port, leases: LEASES, ttlMs: TTL_MS, watchLoss: lib.watchLoss });
      const held = await child.next("held", 300_000);
      child.send({ type: "memory" });
      const mem = await child.next("memory", 60_000);
      child.send({ type: "release" });
      await child.next("released", 60_000).catch(() => undefined);
      const per = (k) => (mem.held[k] - mem.before[k]) / held.held;
      rows.push([lib.label, int(held.held), int(per("heapUsed")), int(per("rss")), int(per("external"))]);
    } finally {
      child.kill();
      await control.flushall();
    }
  }
  return [
    `**Memory per held lease** (${int(LEASES)} leases held, ttl ${TTL_MS / 1000} s, after a full GC; held − before, divided by the leases)`,
    "",
    table(["library", "leases held", "heap bytes per lease", "RSS bytes per lease", "external bytes per lease"], rows),
  ].join("\n");
}

/** Part 3: µs of server time per script call, for scripts that each do one thing 20 times. */
async function perCall(client) {
  const acquire = script("acquire").lua;
  // The generated acquire script up to its body: the bound KEYS and ARGV and the library's helper functions.
  // Its helper functions: the text from the first helper to the body (after the uncontended path, which returns before them).
  const helpers = acquire.slice(acquire.indexOf("\nlocal clockUs"), acquire.lastIndexOf("\nlocal ttlMs, leaseMs"));
  const bindings = acquire.split("\n").filter((l) => /^local \w+(, \w+)* = (KEYS|ARGV)\[1\]/.test(l)).join("\n");
  const times = (line) => `${Array.from({ length: 20 }, () => line).join("\n")}\nreturn 1`;
  const probes = [
    ["EVALSHA of `return 1`", "return 1", 1],
    ["the KEYS and ARGV bound to locals", `${bindings}\nreturn 1`, 1],
    ["acquire's helper functions defined (off the uncontended path only)", `${bindings}${helpers}\nreturn 1`, 1],
    ["HMGET of 6 fields", times("redis.call('HMGET', KEYS[1], 'o', 'h', 't', '@' .. ARGV[2], 'c', 'l')"), 20],
    ["LINDEX of an empty queue", times("redis.call('LINDEX', KEYS[2], 0)"), 20],
    ["HSET of 6 fields", times("redis.call('HSET', KEYS[1], 'c', '1795677947527117', 'o', ARGV[1], 'h', ARGV[2], 't', '1795677947527117', 'n', 1, '@' .. ARGV[2], 1)"), 20],
    ["PEXPIRE", times("redis.call('PEXPIRE', KEYS[1], 10000)"), 20],
    ["HDEL of 6 fields", times("redis.call('HDEL', KEYS[1], 'o', 'h', 't', 'n', 'l', '@' .. ARGV[2])"), 20],
    ["TIME", times("redis.call('TIME')"), 20],
    ["SET PX of a tombstone", times("redis.call('SET', KEYS[3], '1', 'PX', 4000)"), 20],
  ];
  const shas = await Promise.all(probes.map(([, lua]) => client.script("LOAD", lua)));
  const best = probes.map(() => Infinity);
  const keys = ["costs:{k}:lock", "costs:{k}:queue", "costs:{k}:released"];
  const args = ["host:1234:abcdefghijkl.1", "abcdefghijkl.1", "abcdefghijkl.1", 10_000, "", 3_000];
  for (let round = 0; round < 5; round++) {
    for (const [i, sha] of shas.entries()) {
      const before = await snapshot(client);
      for (let n = 0; n < 1_000; n++) await client.evalsha(sha, keys.length, ...keys, ...args);
      const after = await snapshot(client);
      const us = (after.usec.evalsha - (before.usec.evalsha ?? 0)) / (after.calls.evalsha - (before.calls.evalsha ?? 0));
      best[i] = Math.min(best[i], us);
    }
  }
  await client.del(...keys);
  const base = best[0];
  return table(
    ["what", "µs per script call", "µs each (beyond an empty script)"],
    probes.map(([what, , n], i) => [what, fixed(best[i], 2), i === 0 ? "" : fixed((best[i] - base) / n, 2)]),
  );
}

/** Part 4: one cycle three ways, client and server CPU per cycle. */
async function split(client) {
  const acquire = script("acquire");
  const release = script("release");
  const locks = new Surelock({ redis: client, ttl: 10_000 });
  const cad = await client.script("LOAD", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");
  await client.script("LOAD", acquire.lua);
  await client.script("LOAD", release.lua);
  let ids = 0;
  const ways = {
    "surelock (its API)": async (loop) => {
      const lease = await locks.mutex(`costs-a:${loop}`).acquire();
      await lease.release();
    },
    "surelock's two scripts, sent straight": async (loop) => {
      const base = `costs:{b:${loop}}`;
      const hold = `abcdefghijkl.${(++ids).toString(36)}`;
      const a = await client.evalsha(acquire.sha, 3, `${base}:lock`, `${base}:queue`, `${base}:tickets`,
        `host:1234:${hold}`, hold, hold, 10_000, "", 3_000, 10_000);
      await client.evalsha(release.sha, 5, `${base}:lock`, `${base}:queue`, `${base}:tickets`, `${base}:wake`, `${base}:released`,
        hold, hold, String(a[1]), 300_000, 10_000, "1", "PUBLISH", "abcdefghijkl");
    },
    "floor (SET NX PX + compare-and-delete)": async (loop) => {
      const token = `t${++ids}`;
      await client.set(`costs-f:${loop}`, token, "PX", 10_000, "NX");
      await client.evalsha(cad, 1, `costs-f:${loop}`, token);
    },
  };
  const lines = [];
  for (const loops of [1, 50]) {
    const cycles = loops === 1 ? 4_000 : 20_000;
    const results = Object.fromEntries(Object.keys(ways).map((w) => [w, []]));
    for (let round = 0; round < 5; round++) {
      for (const [name, cycle] of Object.entries(ways)) {
        let left = cycles;
        const before = await snapshot(client);
        const cpu = process.cpuUsage();
        const startedAt = performance.now();
        await Promise.all(Array.from({ length: loops }, async (_, loop) => {
          while (left > 0) {
            left--;
            await cycle(loop);
          }
        }));
        const wallMs = performance.now() - startedAt;
        const used = process.cpuUsage(cpu);
        const after = await snapshot(client);
        results[name].push({
          perSecond: (cycles / wallMs) * 1000,
          clientUs: (used.user + used.system) / cycles,
          serverUs: ((after.cpuSeconds - before.cpuSeconds) * 1e6) / cycles,
        });
      }
    }
    const floor = results["floor (SET NX PX + compare-and-delete)"];
    lines.push(`**${loops} loop${loops === 1 ? "" : "s"}** (median of 5 rounds of ${int(cycles)} cycles)`, "");
    lines.push(table(
      ["cycle", "cycles/s", "client CPU µs/cycle", "Redis CPU µs/cycle", "client + Redis µs/cycle", "cycles/s over the floor's"],
      Object.entries(results).map(([name, rs]) => {
        const c = median(rs.map((r) => r.clientUs));
        const s = median(rs.map((r) => r.serverUs));
        return [name, int(median(rs.map((r) => r.perSecond))), fixed(c, 1), fixed(s, 1), fixed(c + s, 1),
          `${fixed(median(rs.map((r) => r.perSecond)) / median(floor.map((r) => r.perSecond)), 2)}×`];
      }),
    ), "");
  }
  await locks.close();
  return lines.join("\n");
}

export async function main(argv = []) {
  const partsAt = argv.indexOf("--parts");
  const ALL = ["side", "memory", "calls", "split"];
  const parts = partsAt === -1 ? ALL : (argv[partsAt + 1] ?? "").split(",").filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !ALL.includes(p))) {
    console.error(`--parts takes one or more of ${ALL.join(", ")} (comma-separated)`);
    return 2;
  }
  const server = await startRedis();
  const client = new Redis({ port: server.port, host: "127.0.0.1" });
  try {
    console.log(`costs on redis-server 127.0.0.1:${server.port}\n`);
    if (parts.includes("side")) {
      console.log("## Surelock beside the peers: one uncontended cycle\n");
      console.log(await side(server.port, client), "\n");
    }
    if (parts.includes("memory")) {
      console.log("## Memory per held lease\n");
      console.log(await memory(server.port, client), "\n");
    }
    if (parts.includes("calls")) {
      console.log("## Redis time per script call (INFO commandstats), least of 5 rounds of 1,000 calls\n");
      console.log(await perCall(client), "\n");
    }
    if (parts.includes("split")) {
      console.log("## One uncontended cycle three ways: client and Redis CPU\n");
      console.log(await split(client));
    }
    return 0;
  } finally {
    client.disconnect();
    stopAll();
  }
}
