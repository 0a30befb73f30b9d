// Where a W1 cycle's client microseconds go: runs W1 for surelock and for the floor, each in a
// child process under V8's CPU profiler, and prints self time per cycle grouped by module
// (surelock's own files, ioredis, other packages, Node's internals, V8, GC), then surelock's
// top functions.
//
//   npm run bench -- --profile W1              1 and 50 loops, 4 s windows
//   node bench/profile.mjs --loops 50 --seconds 8 --top 40
//   node bench/profile.mjs --nodes 5 --loops 1      quorum mode over 5 primaries (the floor as a bare Redlock)
//
// The .cpuprofile files stay in a temporary directory (printed; open them in Chrome DevTools).
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { selfTimes } from "./lib/cpu-profile.mjs";
import { forkChild } from "./lib/ipc.mjs";
import { fixed, int, table } from "./lib/report.mjs";
import { startRedis, stopAll } from "./lib/servers.mjs";

const LIBRARIES = [
  { id: "surelock:default", module: "surelock.mjs", variant: "default", label: "surelock" },
  { id: "floor:default", module: "floor.mjs", variant: "default", label: "floor" },
];

function option(argv, name, fallback) {
  const at = argv.indexOf(name);
  return at === -1 ? fallback : argv[at + 1];
}


async function profileOnce(entry, { ports, loops, seconds, dir }) {
  const file = path.join(dir, `w1-${entry.id.split(":")[0]}-${loops}-loops-${ports.length}-nodes.cpuprofile`);
  const child = forkChild("profile-w1.mjs");
  try {
    child.send({ entry, ports, loops, warmupMs: 1000, durationMs: seconds * 1000, intervalUs: 100, file });
    const done = await child.next("done", seconds * 1000 + 60_000);
    return { ...done, file, times: selfTimes(JSON.parse(readFileSync(file, "utf8"))) };
  } finally {
    child.kill();
  }
}

function report(loops, runs, top) {
  const [mine, floor] = runs;
  // The profiler's time between samples is wall time: while the process waits for a CPU (the
  // machine is shared), the wait lands on whatever was on the stack. So the shares come from
  // the samples, and the µs from the process's own CPU time (cpuUsage) per cycle.
  const perCycle = (run, us) => (us / run.times.busyUs) * run.cpuUsPerCycle;
  const lines = [`## W1, ${loops} loop${loops === 1 ? "" : "s"}: client CPU per acquire + release cycle`, ""];
  lines.push(table(
    ["library", "cycles/s", "process CPU µs/cycle (cpuUsage)", "profiled busy wall µs/cycle", "idle share of the window", ".cpuprofile"],
    runs.map((r) => [r.entry.label, int(r.opsPerSec), fixed(r.cpuUsPerCycle, 1), fixed(r.times.busyUs / r.cycles, 1),
      `${Math.round((100 * r.times.idleUs) / (r.times.idleUs + r.times.busyUs))} %`, r.file]),
  ), "");

  const groups = [...new Set(runs.flatMap((r) => r.times.groups.map((g) => g.group)))];
  const usOf = (run, group) => run.times.groups.find((g) => g.group === group)?.us ?? 0;
  groups.sort((a, b) => usOf(mine, b) - usOf(mine, a));
  lines.push("**Self time by module, µs per cycle**", "");
  lines.push(table(
    ["module", "surelock", "floor", "surelock − floor", "share of surelock's busy time"],
    groups.map((g) => [g, fixed(perCycle(mine, usOf(mine, g)), 2), fixed(perCycle(floor, usOf(floor, g)), 2),
      fixed(perCycle(mine, usOf(mine, g)) - perCycle(floor, usOf(floor, g)), 2), `${fixed((100 * usOf(mine, g)) / mine.times.busyUs, 1)} %`]),
  ), "");

  const files = new Map();
  for (const f of mine.times.functions.filter((x) => x.group === "surelock")) {
    const file = f.where.replace(/:\d+$/, "");
    files.set(file, (files.get(file) ?? 0) + f.us);
  }
  lines.push("**surelock's own code by source file, µs per cycle**", "");
  lines.push(table(
    ["file", "µs/cycle", "share of surelock's busy time"],
    [...files].sort((a, b) => b[1] - a[1]).map(([file, us]) => [file, fixed(perCycle(mine, us), 2), `${fixed((100 * us) / mine.times.busyUs, 1)} %`]),
  ), "");

  lines.push(`**surelock run: top ${top} functions by self time**`, "");
  lines.push(table(
    ["function", "where", "module", "µs/cycle", "share"],
    mine.times.functions.slice(0, top).map((f) => [f.name.replace(/\|/g, "\\|"), f.where || "–", f.group, fixed(perCycle(mine, f.us), 2), `${fixed((100 * f.us) / mine.times.busyUs, 1)} %`]),
  ), "");
  return lines.join("\n");
}

export async function main(argv) {
  const workload = (option(argv, "--profile", "W1") ?? "W1").toUpperCase();
  if (workload !== "W1") {
    console.error(`--profile supports W1 only (got ${workload})`);
    return 2;
  }
  const root = fileURLToPath(new URL("../", import.meta.url));
  try {
    readFileSync(path.join(root, "dist/index.js"));
  } catch {
    console.error("dist/ is missing: run `npm run build` first (`npm run bench` does it for you).");
    return 2;
  }
  const loopCounts = String(option(argv, "--loops", "1,50")).split(",").map(Number).filter((n) => n > 0);
  const seconds = Number(option(argv, "--seconds", "4"));
  const top = Number(option(argv, "--top", "25"));
  const nodes = Number(option(argv, "--nodes", "1"));
  const dir = mkdtempSync(path.join(os.tmpdir(), "surelock-profile-"));
  const ports = [];
  for (let i = 0; i < nodes; i++) ports.push((await startRedis()).port);
  console.log(`profiling W1 (${loopCounts.join(" and ")} loops, ${seconds} s windows, sampling every 100 µs) on redis-server 127.0.0.1:${ports.join(", ")}; profiles in ${dir}\n`);
  try {
    for (const loops of loopCounts) {
      const runs = [];
      for (const entry of LIBRARIES) runs.push({ entry, ...(await profileOnce(entry, { ports, loops, seconds, dir })) });
      console.log(report(loops, runs, top));
    }
    console.log("Self time = the samples that found a function on top of the stack. µs per cycle = its share of the busy samples × the process's CPU time per cycle (cpuUsage: user + system, all threads), because the time between samples is wall time and a process waiting for a CPU (the machine is shared) charges that wait to whatever was on the stack; \"profiled busy wall µs\" above cpuUsage shows how much of that there was. \"socket writes\": the bindings that call write(2) on the socket, mostly the kernel's loopback TCP send. \"V8 / native (program)\": V8 and native code outside JavaScript (socket reads, the event loop). Compare modules within one run, not runs.");
  } finally {
    stopAll();
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (error) => {
    console.error(error);
    stopAll();
    process.exit(1);
  });
}
