// surelock's benchmark against the libraries our users would otherwise pick.
//
//   npm run bench                 all workloads, ~4 minutes; writes bench/results/latest.{json,md}
//                                 and the charts in docs/bench/
//   npm run bench -- --quick      shorter windows (~1 minute); writes bench/results/quick.*
//   npm run bench -- --only W2    one workload (or a list: W2,W3); writes bench/results/quick.*
//   npm run bench -- --only WM    1,000 multiLock waiters behind one holder (surelock only; --waiters N)
//   npm run bench -- --libs surelock,floor   only these libraries (module names); writes bench/results/quick.*
//   add --charts to a quick/partial run to redraw docs/bench/*.svg from it anyway
//   npm run bench -- --profile W1 where a W1 cycle's client CPU goes (profile.mjs; no results file)
//   npm run bench -- --costs      Redis time per command inside the scripts, and a cycle's client and
//                                 Redis CPU split three ways (costs.mjs; no results file)
//
// It starts its own redis-server processes on free loopback ports and stops them at the end.
// It reports; it never fails (exit 0), but a lost update in W3 is printed loudly.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { now, within } from "./lib/clock.mjs";
import { charts } from "./lib/charts.mjs";
import { redisVersion } from "./lib/redis-info.mjs";
import { contendedTable, w1Table, w4Table, w5Table, w6Table, wmTable, wqTable } from "./lib/report.mjs";
import { scorecard } from "./lib/scorecard.mjs";
import { startRedis, stopAll, watchServer } from "./lib/servers.mjs";
import { lineUp } from "./libs/index.mjs";
import * as W1 from "./workloads/w1.mjs";
import * as W2 from "./workloads/w2.mjs";
import * as W3 from "./workloads/w3.mjs";
import * as W4 from "./workloads/w4.mjs";
import * as W5 from "./workloads/w5.mjs";
import * as W6 from "./workloads/w6.mjs";
import * as WQ from "./workloads/wq.mjs";
import * as WM from "./workloads/wm.mjs";
import { RETRY_DELAY_MS as FLOOR_RETRY_MS } from "./libs/floor.mjs";

const root = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));

const argv = process.argv.slice(2);
if (argv.includes("--costs")) {
  // Another job: where an uncontended cycle's time goes, see costs.mjs.
  const { main: costs } = await import("./costs.mjs");
  process.exit(await costs(argv));
}
if (argv.includes("--profile")) {
  // A different job: W1 under the CPU profiler, see profile.mjs.
  const { main: profile } = await import("./profile.mjs");
  process.exit(await profile(argv));
}
const quick = argv.includes("--quick");
const onlyAt = argv.indexOf("--only");
const only = onlyAt === -1 ? undefined : new Set((argv[onlyAt + 1] ?? "").toUpperCase().split(",").filter(Boolean));
const ALL = ["W1", "W2", "W3", "W4", "W5", "W6", "WQ", "WM"];
if (only && [...only].some((w) => !ALL.includes(w))) {
  console.error(`--only takes one or more of ${ALL.join(", ")} (comma-separated)`);
  process.exit(2);
}
const selected = ALL.filter((w) => !only || only.has(w));
// --libs surelock,floor: only the line-up entries whose id starts with one of these (a partial run).
const libsAt = argv.indexOf("--libs");
const libs = libsAt === -1 ? undefined : (argv[libsAt + 1] ?? "").split(",").filter(Boolean);
if (libs && libs.length === 0) {
  console.error("--libs takes one or more library names (comma-separated), e.g. --libs surelock,floor");
  process.exit(2);
}
const picked = (entry) => !libs || libs.some((l) => entry.id === l || entry.id.startsWith(`${l}:`));
const full = !quick && !only && !libs && !argv.includes("--leases") && !argv.includes("--waiters");
const outName = full ? "latest" : "quick";
const drawCharts = full || argv.includes("--charts");

// Window lengths: a warm-up, then the measured window. W5 holds its leases for two windows of
// 2 ttl each (1 with --quick) once they are all taken; W6 cycles through that many distinct keys.
const TIMING = quick
  ? {
    W1: { warmupMs: 200, durationMs: 700 }, W2: { warmupMs: 300, durationMs: 800 }, W3: { warmupMs: 300, durationMs: 800 },
    W4: { warmupMs: 200, durationMs: 700 }, W5: { holdTtls: 1, sizes: [10_000, 100_000] }, W6: { keys: 50_000 },
    WQ: { warmupMs: 300, durationMs: 800 }, WM: { holdTtls: 1, sizes: [1_000] },
  }
  : {
    W1: { warmupMs: 400, durationMs: 1500, rounds: 2 }, W2: { warmupMs: 1000, durationMs: 3000 }, W3: { warmupMs: 1000, durationMs: 3000 },
    W4: { warmupMs: 500, durationMs: 2500 }, W5: { holdTtls: 2, sizes: [10_000, 100_000] }, W6: { keys: 50_000 },
    WQ: { warmupMs: 1000, durationMs: 3000 }, WM: { holdTtls: 2, sizes: [1_000] },
  };

// --leases 100000 (or 10000,100000): W5's lease counts instead of the default ones.
const leasesAt = argv.indexOf("--leases");
if (leasesAt !== -1) {
  const sizes = (argv[leasesAt + 1] ?? "").split(",").map(Number);
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1)) {
    console.error("--leases takes one or more lease counts (comma-separated), e.g. --leases 10000,100000");
    process.exit(2);
  }
  TIMING.W5.sizes = sizes;
}

// --waiters 1000 (or 100,1000): WM's line lengths.
const waitersAt = argv.indexOf("--waiters");
if (waitersAt !== -1) {
  const sizes = (argv[waitersAt + 1] ?? "").split(",").map(Number);
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1)) {
    console.error("--waiters takes one or more line lengths (comma-separated), e.g. --waiters 100,1000");
    process.exit(2);
  }
  TIMING.WM.sizes = sizes;
}

if (!existsSync(root("dist/index.js"))) {
  console.error("dist/ is missing: run `npm run build` first (`npm run bench` does it for you).");
  process.exit(2);
}

const loudLines = [];
function loud(message) {
  loudLines.push(message);
  const bar = "!".repeat(Math.min(100, message.length + 8));
  console.error(`\n${bar}\n!!! ${message} !!!\n${bar}\n`);
}

let unhandled = 0;
// A peer's stray rejection (a timer-driven refresh, a late unlock) must not end the run.
process.on("unhandledRejection", (error) => {
  if (unhandled++ < 5) console.error(`  (unhandled rejection from a library: ${String(error?.message ?? error).split("\n")[0]})`);
});

async function guard(what, fn, limitMs = 90_000) {
  const started = now();
  try {
    const result = await within(fn(), limitMs, { error: `no result within ${limitMs / 1000} s` });
    if (result?.error) console.error(`  ${what}: ${result.error}`);
    else console.log(`  · ${what} (${((now() - started) / 1000).toFixed(1)} s)`);
    return result;
  } catch (error) {
    const message = String(error?.message ?? error).split("\n")[0];
    console.error(`  ${what}: failed after ${Math.round(now() - started)} ms: ${message}`);
    return { error: message };
  }
}

function versionOf(name) {
  try {
    return JSON.parse(readFileSync(root(`node_modules/${name}/package.json`), "utf8")).version;
  } catch {
    return "not installed";
  }
}

/** The commit surelock was built from, and whether src/ had uncommitted changes (dist/ is built from the working tree). */
function gitCommit() {
  try {
    const git = (...args) => execFileSync("git", args, { cwd: root(""), encoding: "utf8" }).trim();
    const dirty = git("status", "--porcelain", "--", "src").split("\n").filter(Boolean).length;
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? ` + ${dirty} uncommitted file(s) in src/` : ""}`;
  } catch {
    return "unknown";
  }
}

/** Warms the JIT and the connection code up, so the first library measured is not the one that pays for it. */
async function warmUp(port, ms) {
  const { createAdapter: make } = await import("./libs/index.mjs");
  const floor = await make({ module: "floor.mjs", variant: "default" });
  await floor.setup([port]);
  const until = now() + ms;
  await Promise.all(Array.from({ length: 10 }, async (_, i) => {
    while (now() < until) await (await floor.lock(`bench:warm-up:${i}`))();
  }));
  await floor.teardown();
}

const WORKLOADS = {
  W1: { module: W1, floor: true, table: (r) => w1Table(r) },
  W2: { module: W2, floor: true, table: (r) => contendedTable(r) },
  W3: { module: W3, floor: true, table: (r) => contendedTable(r) },
  W4: { module: W4, floor: true, table: (r) => w4Table(r) },
  W5: { module: W5, table: (r) => w5Table(r) },
  W6: { module: W6, floor: true, table: (r) => w6Table(r) },
  WQ: { module: WQ, floor: true, table: (r) => wqTable(r) },
  WM: { module: WM, table: (r) => wmTable(r) },
};

const NOTES = {
  W1: "ops = acquire + release cycles per second; latency = acquire, lock() until held; acquire+release = lock() until release() resolved; client CPU = this process's CPU time per cycle (the machine has 2 cores shared with redis-server); Redis CPU and commands per cycle from the server's INFO (commands run inside scripts included). Each loop has its own key, so nothing waits. Full runs: two rounds in opposite orders, each library's better round shown (both in the JSON). \"surelock/this ops\" > 1: surelock does more cycles per second; \"this/floor\" is the row's ops/s over the floor's (1 = as fast as a bare SET NX PX + compare-and-delete).",
  W2: "The critical section reads a counter (GET) and writes it back plus one (SET), on a connection of its own. holder change = a critical section by a different worker than the previous one; handoff = from the holder calling release to the next worker (a different one) holding the lock; longest wait = longest time a worker wanted the lock without holding it (a wait still running at the end counts up to there); Jain's index over the 10 workers' section counts (1 = perfectly even). acquire errors = calls that gave up (redlock: 10 retries by default); the worker asks again and its wait goes on. lost updates = sections completed − final counter (0 for a correct lock). \"surelock/this\" > 1 for changes/s, < 1 for handoff: surelock better. \"this/floor changes/s\": the row's holder changes/s over the floor's.",
  W3: "as W2 across 4 processes.",
  W4: "one loop, no contention; every library over the same 5 redis-servers (retry settings play no part without contention, so one row per library; surelock and the floor also on one of the nodes). loopback: the 5 redis-servers, the client and everything else share 2 cores, so a quorum pays in CPU what a network would make it pay in waiting. +N ms each way: every connection goes through a proxy (a process of its own) that holds each byte back N ms in each direction, as a network between hosts would. \"surelock quorum/this p50\" compares acquire+release p50 with surelock's quorum row on the same network (< 1: surelock faster); \"this/floor p50\" compares it with the floor on the same network and the same number of nodes (1 = as fast as the floor).",
  W5: "Leases with ttl 3 s, taken in chunks of 1,000 by a separate process, then held for two windows of the same length while the library renews them by itself. First window, nobody else talks to the server; counted by it: script calls (EVALSHA, EVAL, FCALL), all commands (INFO commandstats, which also counts the commands run inside scripts), Redis CPU = server CPU time / wall time, µs per script call = commandstats usec / calls. Second window: longest script call = the longest script call in SLOWLOG (threshold 0.5 ms; \"< 0.5\": none that long); renewal bursts from INFO commandstats read every 10 ms (so a burst spans at least 10 ms); script calls with less than 150 ms of quiet between them form one burst (a tick of surelock's watchdog; libraries that renew each lease on its own timer show few, long bursts). bystander = another connection sending PING after PING, from the bench process (on 2 cores it competes for CPU with the holder and the server, so its max includes some scheduling noise); \"during bursts\" = PINGs that were waiting at some moment of a burst. Client RSS / heap per lease = the holding process after − before taking the leases (both after a full GC, --expose-gc), divided by the leases held. lost = leases the library reported lost by the end of the second window. \"surelock/this\" < 1: surelock costs less.",
  WQ: "W2's section and figures over a quorum: 10 workers in one process on one key, every library over the same 5 redis-servers, then over 3 of them (the counter on the bench's own server). Redlock implementations and redis-semaphore's RedlockMutex take a majority on their own terms; the floor is a bare Redlock (SET NX PX on every node in parallel, held with a majority, compare-and-delete everywhere, a refused attempt retried after 1 ms: no safety). commands/section and script calls/section: what the busiest node ran per section in the window (INFO commandstats; commands run inside scripts count too). \"this/floor changes/s\": the row's holder changes/s over the floor's on as many nodes.",
  WM: "surelock only (no peer has a multi-key lock). One process: a holder (a Surelock of its own) holds a multiLock of 3 keys, or a mutex of the first, while 1,000 acquires of the same set (or mutex) on another Surelock wait behind it, their tickets refreshed by that Surelock's watchdog (ticket lease 3 s, refreshed every second). While they wait, for two ttl windows (one with --quick): longest keepalive call = the longest keepalive script call in SLOWLOG (threshold 0.1 ms; in parentheses the number of KEYS it carried: 12 per multiLock waiter, 4 per mutex waiter, 1 per key of a renewed hold), keepalive calls/s, µs per call and Redis CPU from INFO commandstats and cpu; script calls per tick = script calls per burst (INFO commandstats every 10 ms, calls with less than 150 ms of quiet between them form one burst); PING = a bystander sending PING after PING from the bench process (p50 / p99 / max over the whole window, then those waiting at some moment of a burst). While the line moves: queueing = the waiters' arrivals (until all stand in line, and 1.5 s more); drain = the holder releases, each waiter releases as soon as it holds (bounded to 60 s): script calls and publishes per holder served, the longest call of each script; leave = what still waits gives up.",
  W6: "Each library acquires and releases every key once (50 loops in parallel, no contention), after one warm-up cycle on another key. used_memory Δ = INFO memory after − before, over the keys released (right after the last release); MEMORY USAGE = what the keys still there weigh (SCAN, then PTTL and MEMORY USAGE of each key). Averaged over a day = used_memory Δ per key × the share of a day the surveyed bytes will still live (Σ bytes × min(PTTL, 1 day) / (Σ bytes × 1 day); a key without a TTL counts the whole day). The floor deletes its key: it shows what \"nothing left\" reads as (used_memory moves by a few bytes per key either way).",
};

async function main() {
  const wallStart = now();
  console.log(`surelock bench${quick ? " --quick" : ""}${only ? ` --only ${[...only].join(",")}` : ""}: starting redis-server processes on loopback...`);
  const main = await startRedis();
  const quorum = selected.includes("W4") || selected.includes("WQ") ? await Promise.all(Array.from({ length: 5 }, () => startRedis())) : [];
  for (const server of [main, ...quorum]) {
    watchServer(server, (message) => {
      console.error(`\n${message}\nStopping: the figures of this run would be meaningless (nothing written).`);
      stopAll();
      process.exit(1);
    });
  }
  const control = new Redis({ port: main.port, host: "127.0.0.1" });
  const quorumControls = quorum.map((s) => new Redis({ port: s.port, host: "127.0.0.1" }));
  const ports = { main: main.port, quorum: quorum.map((s) => s.port) };
  console.log(`redis-server on 127.0.0.1:${main.port}${quorum.length ? `, quorum on ${ports.quorum.join(", ")}` : ""}`);
  const cpus = os.cpus();
  const results = {
    machine: {
      date: new Date().toISOString(),
      cores: cpus.length,
      cpuModel: cpus[0]?.model?.replace(/\s+/g, " ").trim() ?? "unknown",
      memoryGB: Math.round(os.totalmem() / 2 ** 30),
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      node: process.version,
      redis: await redisVersion(control),
      loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
      surelockCommit: gitCommit(),
      versions: Object.fromEntries(
        ["redlock", "redlock5", "@sesamecare-oss/redlock", "redis-semaphore", "ioredis"].map((n) => [n, versionOf(n)]),
      ),
    },
    options: { quick, only: only ? [...only] : null, timing: TIMING, command: `npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}` },
    notImported: [],
    workloads: {},
    loud: loudLines,
  };
  const m = results.machine;
  console.log(`${m.cores} cores (${m.cpuModel}), Node ${m.node}, Redis ${m.redis}, load average ${m.loadAverageAtStart.join(" ")}`);
  const { failed } = await lineUp({ floor: true });
  for (const f of failed) console.log(`  could not import ${f.module}: ${f.error} (left out)`);
  results.notImported = failed;

  await warmUp(main.port, quick ? 300 : 1000);
  const sections = [];
  for (const name of selected) {
    const w = WORKLOADS[name];
    const entries = (await lineUp({ floor: w.floor === true })).entries.filter(picked);
    const started = now();
    console.log(`\n${w.module.title} ...`);
    const result = await w.module.run({
      entries,
      ports,
      timing: TIMING[name],
      control,
      controls: quorumControls,
      guard,
      loud,
    });
    result.title = w.module.title;
    result.seconds = Math.round((now() - started) / 100) / 10;
    results.workloads[name] = result;
    let note = NOTES[name];
    if (name === "W2" || name === "W3") {
      const bad = result.rows.filter((r) => r.overlaps > 0);
      note += bad.length
        ? ` **Overlapping sections (one started before the previous holder called release): ${bad.map((r) => `${r.label} ${r.overlaps}`).join(", ")}.**`
        : " No library let a section start before the previous holder called release (checked on the machine's monotonic clock, shared by all processes).";
    }
    const md = `## ${w.module.title}\n\n${w.table(result)}\n\n${note}\n`;
    sections.push(md);
    console.log(`\n${md}(${result.seconds} s)`);
  }

  results.totalSeconds = Math.round((now() - wallStart) / 100) / 10;
  results.unhandledRejections = unhandled;
  const header = [
    `# surelock benchmark results${full ? "" : ` (${results.options.command})`}`,
    "",
    `${m.date} · ${m.cores} cores, ${m.cpuModel} · ${m.memoryGB} GB · ${m.platform} · Node ${m.node} · Redis ${m.redis} (redis-servers started by the bench on loopback, no persistence) · load average at start ${m.loadAverageAtStart.join(" ")} · surelock ${m.surelockCommit}`,
    "",
    `Peers: redlock ${m.versions.redlock}, redlock5 ${m.versions.redlock5}, @sesamecare-oss/redlock ${m.versions["@sesamecare-oss/redlock"]}, redis-semaphore ${m.versions["redis-semaphore"]}; all on ioredis ${m.versions.ioredis}, ttl 10 s everywhere (W5: 3 s). The floor: \`SET key token NX PX\` to acquire, an EVALSHA compare-and-delete (GET == token, then DEL) to release, a refused SET retried every ${FLOOR_RETRY_MS} ms (setTimeout, no jitter); over 5 nodes (W4) SET NX PX on all in parallel, held with a majority. "(fast)" rows: redlock retryDelay 2 ms, retryJitter 1 ms, retryCount -1 (forever); redis-semaphore retryInterval 1 ms. Other rows: each library's defaults (redlock: 10 retries 200 ± 100 ms apart; redis-semaphore: polls every 10 ms, gives up after 10 s). surelock: defaults (woken by the release over pub/sub, safety poll 1 s). Auto-extension: surelock's watchdog renews every held lease (at ttl/3, one batched script call per tick); redlock 4 has none; redlock 5 and @sesamecare-oss/redlock extend only inside \`using()\`, off for plain \`acquire()\`; redis-semaphore refreshes each held lock on its own timer (every 0.8 × ttl).`,
    "",
    `Reproduce: \`${results.options.command}\` (${results.totalSeconds} s for this run). Ratios are surelock's figure divided by the row's.`,
    "",
  ];
  if (failed.length) header.push(`Not imported (left out): ${failed.map((f) => `${f.module}: ${f.error}`).join("; ")}`, "");
  if (loudLines.length) header.push(...loudLines.map((l) => `**${l}**`), "");
  const card = scorecard(results);
  const goals = card
    ? [
      "## The goals of issue 16, judged by this run",
      "",
      card,
      "",
      "W2, W3: longest wait in parentheses. W5: the PINGs' max outside the bursts is what the machine's own noise looks like (a max during bursts near it says little); the longest script call is the server's own measure (SLOWLOG). Best peer: the peer row with the best figure (any retry setting; in W5 only peers that lost no lease). \"met\" compares surelock's figure with the goal; the tables below have every figure.",
      "",
    ]
    : [];
  if (card) console.log(`\n${goals.join("\n")}`);
  const markdown = [...header, ...goals, ...sections].join("\n");

  const dir = root("bench/results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/${outName}.json`, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${dir}/${outName}.md`, markdown);
  console.log(`\nwrote bench/results/${outName}.json and bench/results/${outName}.md`);
  if (drawCharts) {
    mkdirSync(root("docs/bench"), { recursive: true });
    const drawn = charts(results);
    for (const [file, svg] of Object.entries(drawn)) {
      writeFileSync(root(`docs/bench/${file}`), svg);
      console.log(`wrote docs/bench/${file}`);
    }
    // The same tables with the charts, for the docs (the README links here).
    const images = Object.keys(drawn).sort().map((file) => `![${file.replace(".svg", "")}](${file})`);
    writeFileSync(root("docs/bench/results.md"), [...header, ...goals, ...images.flatMap((i) => [i, ""]), ...sections].join("\n"));
    console.log("wrote docs/bench/results.md");
  }
  if (loudLines.length) for (const l of loudLines) loud(l);
  console.log(`done in ${results.totalSeconds} s`);

  await Promise.all([control, ...quorumControls].map((c) => c.quit().catch(() => c.disconnect())));
  stopAll();
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    stopAll();
    process.exit(1);
  },
);
