// npm run demo [-- --strategy surelock --instances 4 --seed 7 ...]
//
// A flash sale: shop instances behind nginx (when installed; the demo's own round-robin balancer
// otherwise) sell a small stock to a burst of
// buyers, once per way of locking, with a real fault injected into each run. Prints what
// happened and writes it, with a timeline SVG, to .tmp/demo/ (gitignored), or to the tracked
// docs/demo/ with --write-docs. See examples/flash-sale/README.md.

import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const USAGE = `usage: npm run demo [-- options]

  --strategy NAME     run only this strategy (repeatable, or comma-separated):
                      none, setnx-then-expire, del-without-check, get-then-del, surelock, surelock+fencing
  --instances N       shop instances behind the balancer (default 2)
  --balancer B        auto (default: nginx if installed, else own), nginx, or own (balancer.mjs)
  --stock N           units on sale (default 40)
  --buyers N          purchases in the burst (default 160)
  --connections N     concurrent buyers (default 32)
  --ttl MS            lock TTL in ms (default 400)
  --seed N            picks think times and the moment of the fault (default 1)
  --no-faults         no SIGSTOP / SIGKILL
  --out DIR           where to write output.txt and timeline.svg (default .tmp/demo, gitignored)
  --write-docs        write them to docs/demo/ instead: the tracked copies the README shows
  --no-files          write nothing, only print

Redis: a throwaway redis-server on a free loopback port, or REDIS_URL if set (keys are namespaced
and removed afterwards).`;

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let args;
try {
  args = parseArgs({
    options: {
      strategy: { type: "string", multiple: true },
      instances: { type: "string" },
      balancer: { type: "string" },
      stock: { type: "string" },
      buyers: { type: "string" },
      connections: { type: "string" },
      ttl: { type: "string" },
      seed: { type: "string" },
      "no-faults": { type: "boolean" },
      out: { type: "string" },
      "write-docs": { type: "boolean" },
      "no-files": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }).values;
} catch (error) {
  fail(`${error.message}\n\n${USAGE}`);
}
if ([args.out !== undefined, args["write-docs"], args["no-files"]].filter(Boolean).length > 1) {
  fail(`--out, --write-docs and --no-files exclude each other\n\n${USAGE}`);
}
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (!existsSync(resolve(root, "dist/index.js"))) fail("dist/ is missing: run `npm run build` first (npm run demo does it for you).");

const { runFlashSale, STRATEGY_NAMES } = await import("./flash-sale/run.mjs");
const { legend, renderStory, renderTable } = await import("./flash-sale/report.mjs");
const { renderTimeline } = await import("./flash-sale/timeline-svg.mjs");

const int = (name, value) => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} takes a whole number, got ${JSON.stringify(value)}`);
  return n;
};
if (args.balancer !== undefined && !["auto", "nginx", "own"].includes(args.balancer)) {
  fail(`--balancer takes auto, nginx or own, got ${JSON.stringify(args.balancer)}`);
}
const strategies = args.strategy?.flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean);
for (const name of strategies ?? []) {
  if (!STRATEGY_NAMES.includes(name)) fail(`unknown strategy ${JSON.stringify(name)}: one of ${STRATEGY_NAMES.join(", ")}`);
}
const options = Object.fromEntries(Object.entries({
  strategies,
  instances: int("instances", args.instances),
  balancer: args.balancer,
  stock: int("stock", args.stock),
  buyers: int("buyers", args.buyers),
  connections: int("connections", args.connections),
  ttlMs: int("ttl", args.ttl),
  seed: int("seed", args.seed),
  faults: args["no-faults"] ? false : undefined,
}).filter(([, v]) => v !== undefined));

// Colour follows stdout (NO_COLOR / FORCE_COLOR respected); the progress line goes to stderr.
const color = process.env.NO_COLOR ? false : process.env.FORCE_COLOR ? true : process.stdout.isTTY === true;
const live = process.stderr.isTTY === true;
let lastDraw = 0;
let strategyStarted = 0;
let lastNote;
const onProgress = (p) => {
  const step = `[${p.index + 1}/${p.total}] ${p.strategy}`;
  if (p.phase === "starting") {
    strategyStarted = performance.now();
    lastNote = undefined;
  }
  if (!live) {
    if (p.phase === "stopping") process.stderr.write(`${step}: done in ${((performance.now() - strategyStarted) / 1000).toFixed(1)} s\n`);
    return;
  }
  const now = performance.now();
  if (p.note === undefined && p.phase === "burst" && now - lastDraw < 80) return;
  lastDraw = now;
  const bits = [step, p.phase];
  if (p.answered !== undefined) bits.push(`buyers answered ${p.answered}/${p.buyers}`);
  if (p.sold !== undefined) bits.push(`sold ${p.sold}`);
  lastNote = p.note ?? lastNote;
  if (lastNote) bits.push(lastNote);
  const line = bits.join("  ").slice(0, (process.stderr.columns || 100) - 1);
  process.stderr.write(`\r\x1b[2K${color ? `\x1b[36m${line}\x1b[0m` : line}`);
};

const controller = new AbortController();
let interrupts = 0;
const interrupt = (signal) => {
  interrupts++;
  if (interrupts > 1) process.exit(130); // the exit hook still kills every child by pid
  if (live) process.stderr.write("\r\x1b[2K");
  process.stderr.write(`${signal}: stopping every process the demo started...\n`);
  controller.abort(new Error(`interrupted (${signal})`));
};
process.on("SIGINT", interrupt);
process.on("SIGTERM", interrupt);

const started = performance.now();
let result;
try {
  result = await runFlashSale({ ...options, signal: controller.signal, onProgress });
} catch (error) {
  if (live) process.stderr.write("\r\x1b[2K");
  if (controller.signal.aborted) {
    process.stderr.write("stopped; every process the demo started has exited.\n");
    process.exit(130);
  }
  fail(`demo failed: ${error?.stack ?? error}\n(every process it started has been stopped)`);
}
if (live) process.stderr.write("\r\x1b[2K");

const o = result.options;
const redis = result.redis.throwaway
  ? `redis-server ${result.redis.version} on ${result.redis.url.replace("redis://", "")} (throwaway)`
  : `Redis at ${result.redis.url} (REDIS_URL)`;
const report = (paint) => [
  `Flash sale: ${o.stock} units, ${o.buyers} buyers (${Math.min(o.connections, o.buyers)} at a time), ${o.instances} shop instances behind ${result.balancer}.`,
  `${redis}; lock TTL ${o.ttlMs} ms; seed ${o.seed}; faults ${o.faults ? "on" : "off"}.`,
  "",
  renderTable(result, { color: paint }),
  "",
  renderStory(result, { color: paint }),
  "",
  legend(result),
];

const tail = [];
if (!args["no-files"]) {
  const dir = resolve(args["write-docs"] ? resolve(root, "docs/demo") : args.out ?? resolve(root, ".tmp/demo"));
  const show = (path) => relative(process.cwd(), path) || path;
  const txt = resolve(dir, "output.txt");
  const svg = resolve(dir, "timeline.svg");
  tail.push(`Written: ${show(txt)} (this text) and ${show(svg)} (the timeline).`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(txt, `${[...report(false), ...tail].join("\n")}\n`);
  writeFileSync(svg, renderTimeline(result));
}
tail.push(`Done in ${((performance.now() - started) / 1000).toFixed(1)} s; every process the demo started has exited.`);
process.stdout.write(`${[...report(color), ...tail].join("\n")}\n`);
