// One profiled W1 run: `loops` loops of acquire + release on their own keys, warmed up first,
// then the measured window under V8's sampling CPU profiler (the one --cpu-prof uses, started
// through node:inspector so that start-up and warm-up stay out of the profile). Writes the
// .cpuprofile to `file` and answers { cycles, opsPerSec, cpuUsPerCycle }.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { createAdapter } from "../libs/index.mjs";
import { uncontended } from "../workloads/uncontended.mjs";

const send = (message) => new Promise((resolve) => process.send(message, resolve));

process.once("message", async ({ entry, ports, loops, warmupMs, durationMs, intervalUs, file }) => {
  const adapter = await createAdapter(entry);
  await adapter.setup(ports);
  const keyPrefix = `bench:profile:${entry.id}:${loops}`;
  await uncontended({ adapter, keyPrefix, concurrency: loops, warmupMs: 0, durationMs: warmupMs });
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: intervalUs });
  await session.post("Profiler.start");
  const cpu = process.cpuUsage();
  const result = await uncontended({ adapter, keyPrefix, concurrency: loops, warmupMs: 0, durationMs });
  const used = process.cpuUsage(cpu);
  const { profile } = await session.post("Profiler.stop");
  session.disconnect();
  writeFileSync(file, JSON.stringify(profile));
  await adapter.teardown();
  const cycles = result.opsPerSec * (durationMs / 1000);
  await send({ type: "done", cycles, opsPerSec: result.opsPerSec, cpuUsPerCycle: (used.user + used.system) / cycles, errors: result.errors });
  process.exit(0);
});
