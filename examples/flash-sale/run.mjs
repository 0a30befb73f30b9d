// The flash-sale orchestrator: for each strategy it starts the shop instances (child processes),
// puts the round-robin balancer in front of them, fires a burst of purchases with autocannon,
// injects the strategy's fault for real (SIGSTOP/SIGCONT or SIGKILL), then reads what happened
// from Redis (stock counter, order log, keys without a TTL) and from the holder intervals the
// instances reported. Nothing in the result is derived from a strategy's name.
//
//   import { runFlashSale } from "./examples/flash-sale/run.mjs";
//   const result = await runFlashSale({ strategies: ["surelock+fencing"], seed: 3 });

import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import Redis from "ioredis";
import { countDoubleHolders, overlapSegments } from "./analysis.mjs";
import { startBalancer } from "./balancer.mjs";
import { findNginx, startNginx } from "./nginx.mjs";
import { random } from "./random.mjs";
import { startRedisServer } from "./redis-server.mjs";
import { STRATEGIES, STRATEGY_NAMES, dataKeys, keysFor } from "./strategies.mjs";

export { STRATEGY_NAMES };

const SHOP = fileURLToPath(new URL("./shop.mjs", import.meta.url));

export const DEFAULTS = Object.freeze({
  strategies: STRATEGY_NAMES,
  instances: 2,
  stock: 40,
  buyers: 160,
  connections: 32,
  ttlMs: 400,
  acquireTimeoutMs: 1200,
  thinkMs: [6, 16],
  spinMs: [2, 6],
  faults: true,
  seed: 1,
  // "auto": nginx when the machine has it, the demo's own balancer otherwise; "nginx" or "own" to choose.
  balancer: "auto",
});

/** Tracks every process the demo starts, so that every one of them is stopped, whatever happens. */
class Children {
  #entries = [];

  constructor(onChild) {
    this.onChild = onChild;
  }

  add(child, name) {
    if (child.pid !== undefined) this.onChild?.(child.pid, name);
    const entry = { child, name, exited: new Promise((resolve) => child.once("exit", () => resolve())) };
    child.once("error", () => {}); // a failed spawn also ends in "exit" or is reported by the caller
    this.#entries.push(entry);
    return entry.exited;
  }

  get pids() {
    return this.#entries.map((e) => e.child.pid).filter((pid) => pid !== undefined);
  }

  static alive(child) {
    return child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  }

  /** SIGTERM (and SIGCONT, in case it is paused), SIGKILL after graceMs; resolves once all exited. */
  async stopAll(graceMs = 1_500) {
    await Promise.all(this.#entries.map(async ({ child, exited }) => {
      if (!Children.alive(child)) return;
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    }));
  }

  /** Last resort on process exit: synchronous. */
  killAllNow() {
    for (const { child } of this.#entries) if (Children.alive(child)) child.kill("SIGKILL");
  }
}

/** Resolves with `promise`, or rejects after `ms` or when `signal` aborts. */
function within(promise, ms, what, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
    const onAbort = () => reject(signal.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  });
}

/** Resolves once the kernel reports `pid` stopped (Linux: /proc state T); elsewhere after a moment. */
async function stoppedByKernel(pid) {
  const deadline = performance.now() + 1_000;
  while (performance.now() < deadline) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return sleep(20);
    }
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if (state === "T" || state === "t") return undefined;
    await sleep(1);
  }
  throw new Error(`pid ${pid} did not stop within 1 s of SIGSTOP`);
}

/**
 * Runs the flash sale once per strategy and returns what happened.
 * @param {Partial<typeof DEFAULTS> & { redisUrl?: string, signal?: AbortSignal, onProgress?: (p: object) => void, onChild?: (pid: number, name: string) => void }} [options]
 */
export async function runFlashSale(options = {}) {
  const o = { ...DEFAULTS, ...options };
  o.redisUrl ??= process.env.REDIS_URL || undefined;
  for (const name of o.strategies) {
    if (!STRATEGIES[name]) throw new Error(`unknown strategy ${JSON.stringify(name)}: one of ${STRATEGY_NAMES.join(", ")}`);
  }
  for (const key of ["instances", "stock", "buyers", "connections", "ttlMs", "acquireTimeoutMs", "seed"]) {
    if (!Number.isInteger(o[key]) || o[key] < (key === "seed" ? 0 : 1)) throw new Error(`${key} must be a positive integer, got ${o[key]}`);
  }
  if (o.instances < 2 && o.faults) throw new Error("faults need at least 2 instances (one is paused or killed)");
  if (!["auto", "nginx", "own"].includes(o.balancer)) throw new Error(`balancer must be auto, nginx or own, got ${JSON.stringify(o.balancer)}`);
  const nginx = o.balancer === "own" ? undefined : findNginx();
  if (o.balancer === "nginx" && nginx === undefined) throw new Error("balancer nginx: no nginx found (on PATH, in /usr/sbin or /usr/local/sbin, or $NGINX)");

  const started = performance.now();
  const clockBase = process.hrtime.bigint();
  const stamp = () => Number(process.hrtime.bigint() - clockBase) / 1e6;
  const children = new Children(o.onChild);
  const onExit = () => children.killAllNow();
  process.on("exit", onExit);
  let server;
  let client;
  try {
    if (o.redisUrl === undefined) {
      server = await startRedisServer({ onSpawn: (child) => children.add(child, "redis-server") });
    }
    const redisUrl = o.redisUrl ?? server.url;
    client = new Redis(redisUrl, { maxRetriesPerRequest: 2, lazyConnect: true });
    client.on("error", () => {}); // commands reject on their own; no "Unhandled error event" noise
    await within(client.connect(), 5_000, `connecting to ${redisUrl}`, o.signal);
    const env = {
      o, client, children, clockBase, stamp, redisUrl, nginx,
      runNs: `surelock-demo:${randomBytes(4).toString("hex")}`,
    };
    const results = [];
    for (const [index, name] of o.strategies.entries()) {
      o.signal?.throwIfAborted();
      results.push(await runStrategy(env, name, index));
    }
    return {
      redis: server ? { url: server.url, version: server.version, throwaway: true } : { url: redisUrl, throwaway: false },
      balancer: results[0]?.balancer ?? (nginx ? "nginx" : "the demo's own round-robin balancer"),
      options: { ...o, signal: undefined, onProgress: undefined, onChild: undefined },
      strategies: results,
      pids: children.pids,
      durationMs: performance.now() - started,
    };
  } finally {
    client?.disconnect();
    await children.stopAll();
    await server?.stop();
    process.off("exit", onExit);
  }
}

async function runStrategy(env, name, index) {
  const { o, client, children, stamp } = env;
  const strategy = STRATEGIES[name];
  const ns = `${env.runNs}:${index}`;
  const keys = keysFor(ns);
  const rand = random(o.seed * 7919 + index);
  const fault = o.faults
    ? {
      ...strategy.fault,
      instance: null, // the first instance to reach the fault point once it is armed
      armAfterSales: Math.min(3 + Math.floor(rand() * 5), Math.max(1, Math.floor(o.stock / 3))),
      injected: false,
    }
    : null;
  const progress = (phase, extra) => o.onProgress?.({ strategy: name, index, total: o.strategies.length, phase, ...extra });
  progress("starting");

  await client.set(keys.units, String(o.stock));
  await client.del(keys.orders);

  const holds = new Map();
  const events = [];
  const problems = [];
  const sales = { total: 0, othersSincePause: 0 };
  const pause = { at: null, minUntil: 0, target: 0, timers: [], nextArmed: false };
  // The next holder, held at fault.next until the victim's late step has landed: { shop, id, at }.
  let next = null;
  // The victim's request has ended: whatever it did after waking up has landed. { letGoAt }
  let victimDone = null;
  let armed = false;
  let stopping = false;

  // --- the instances -------------------------------------------------------------------------
  const shops = [];
  const startShop = (i) => {
    const child = fork(SHOP, [], {
      execArgv: [],
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
      env: {
        ...process.env,
        FLASH_SALE: JSON.stringify({
          index: i, strategy: name, redisUrl: env.redisUrl, ns, seed: o.seed, faults: o.faults,
          ttlMs: o.ttlMs, acquireTimeoutMs: o.acquireTimeoutMs, thinkMs: o.thinkMs, spinMs: o.spinMs,
          clockBase: env.clockBase.toString(),
        }),
      },
    });
    const shop = { index: i, child, pid: child.pid, stderr: "", killed: false, bye: false };
    shop.exited = children.add(child, `shop ${i}`);
    child.stderr.on("data", (chunk) => { shop.stderr = (shop.stderr + chunk).slice(-2000); });
    shop.ready = new Promise((resolve, reject) => {
      child.on("message", (m) => {
        if (m.t === "ready") resolve(m.port);
        else onMessage(shop, m);
      });
      child.once("exit", (code, sig) => {
        reject(new Error(`shop ${i} exited before it was ready (${sig ?? code}): ${shop.stderr.trim()}`));
        if (!shop.killed && !stopping && !o.signal?.aborted) {
          problems.push(new Error(`shop ${i} exited unexpectedly (${sig ?? code}): ${shop.stderr.trim()}`));
        }
      });
    });
    shop.ready.catch(() => {});
    return shop;
  };

  // --- what the instances report, and the fault plan --------------------------------------------
  // A message to an instance; one that has exited (killed, or stopped) no longer listens.
  const tell = (shop, message) => { if (shop.child.connected) shop.child.send(message); };
  const openHoldsOf = (i) => [...holds.values()].filter((h) => h.instance === i && h.end === undefined);
  const victim = () => shops[fault.instance];

  function onMessage(shop, m) {
    if (m.t === "begin") {
      holds.set(m.id, { instance: shop.index, id: m.id, start: m.at });
    } else if (m.t === "end") {
      const hold = holds.get(m.id) ?? { instance: shop.index, id: m.id, start: m.at };
      Object.assign(hold, {
        end: m.at, believedUntil: m.believedUntil, outcome: m.outcome, read: m.read, overwrote: m.overwrote,
        writeAt: m.writeAt, heldAtWrite: m.heldAtWrite, lostAt: m.lostAt, releaseError: m.releaseError,
      });
      holds.set(m.id, hold);
      if (m.outcome === "sold") {
        sales.total++;
        if (pause.at !== null && shop.index !== fault.instance) sales.othersSincePause++;
      }
      if (isStaleWrite(hold)) events.push({ kind: "stale-write", instance: shop.index, at: m.writeAt, undid: undidBy(hold) });
      if (m.outcome === "stale-refused") events.push({ kind: "refused", instance: shop.index, at: m.refusedAt ?? m.at });
      if (m.lostAt !== undefined) events.push({ kind: "lost", instance: shop.index, at: m.lostAt });
      if (m.releaseError) events.push({ kind: "release-refused", instance: shop.index, at: m.at, detail: m.releaseError });
      progress("burst", { sold: sales.total });
      if (fault && !armed && sales.total >= fault.armAfterSales) {
        armed = true;
        for (const s of shops) tell(s, { t: "arm", point: fault.at });
        events.push({ kind: "armed", instance: -1, at: stamp(), point: fault.at });
      }
      if (fault && m.id === fault.requestId) victimDone = { letGoAt: m.at };
      if (pause.at !== null) maybeResume();
      maybeLetNextGo();
    } else if (m.t === "gate") {
      onGate(shop, m).catch((error) => problems.push(error));
    } else if (m.t === "bye") {
      shop.bye = true;
    }
  }

  async function onGate(shop, m) {
    if (m.point === fault.next && shop.index !== fault.instance) {
      holdNext(shop, m);
      return;
    }
    if (fault.injected) {
      // Another instance got there first (the disarm crossed this report): carry on.
      tell(shop, { t: "go", id: m.id });
      return;
    }
    fault.injected = true;
    fault.instance = shop.index;
    fault.requestId = m.id;
    for (const s of shops) if (s !== shop) tell(s, { t: "disarm", point: fault.at });
    if (fault.kind === "kill") {
      shop.killed = true;
      const at = stamp();
      shop.child.kill("SIGKILL");
      await shop.exited;
      events.push({ kind: "kill", instance: shop.index, at, point: m.point });
      // It had the lock from its SETNX on, and believed so until it died.
      if (!m.holding) holds.set(m.id, { instance: shop.index, id: m.id, start: m.at });
      for (const hold of openHoldsOf(shop.index)) Object.assign(hold, { end: at, believedUntil: at, outcome: "killed" });
      progress("burst", { sold: sales.total, note: `SIGKILL instance ${shop.index} at ${m.point}` });
      return;
    }
    // How many sales by others it sleeps through at least: up to 6, leaving units for the next holder.
    const unitsLeft = Number(await client.get(keys.units));
    shop.child.kill("SIGSTOP");
    await stoppedByKernel(shop.pid);
    const at = stamp();
    Object.assign(pause, { target: Math.max(1, Math.min(6, Math.floor(unitsLeft / 2))), minUntil: at + 1.25 * o.ttlMs }); // "past its TTL"
    sales.othersSincePause = 0;
    pause.at = at;
    events.push({ kind: "pause", instance: shop.index, at, point: m.point });
    tell(shop, { t: "go", id: m.id }); // read by the instance once it runs again
    pause.timers.push(setTimeout(() => maybeResume(), 1.25 * o.ttlMs + 1));
    pause.timers.push(setTimeout(() => resume("deadline"), Math.max(3_000, 6 * o.ttlMs)));
    progress("burst", { sold: sales.total, note: `SIGSTOP instance ${shop.index} at ${m.point}` });
  }

  // The pause has outlasted the TTL (the victim's lock has expired and others have taken it),
  // and a victim paused before its write has slept through some sales by others. Without
  // fault.next it resumes now; with it, the next holder to reach fault.next in another instance
  // is held there first, and the victim resumes while that holder holds the lock.
  function maybeResume() {
    if (pause.at === null || stamp() < pause.minUntil) return;
    if (fault.at === "before-write" && sales.othersSincePause < pause.target) return;
    if (!fault.next) {
      resume(`${sales.othersSincePause} sales by others`);
      return;
    }
    if (pause.nextArmed) return;
    pause.nextArmed = true;
    for (const s of shops) if (s.index !== fault.instance) tell(s, { t: "arm", point: fault.next });
    events.push({ kind: "armed", instance: -1, at: stamp(), point: fault.next });
  }

  function holdNext(shop, m) {
    if (next !== null || pause.at === null) {
      tell(shop, { t: "go", id: m.id }); // one holder is held, and only while the victim sleeps
      return;
    }
    next = { shop, id: m.id, at: stamp(), timer: setTimeout(() => letNextGo("deadline"), Math.max(2_000, 5 * o.ttlMs)) };
    for (const s of shops) if (s !== shop) tell(s, { t: "disarm", point: m.point });
    resume(`instance ${shop.index} holds the lock, held at ${m.point}`);
  }

  // A late write (surelock rows) must have landed before the held holder reads. A late DEL
  // (naive rows) frees the held holder's lock: someone else must also have taken it and written
  // before the held holder writes, so that two holders have sold from the same read.
  function maybeLetNextGo() {
    if (next === null || next.released || victimDone === null) return;
    if (fault.next === "before-write") {
      const secondHolderWrote = [...holds.values()].some((h) =>
        h.id !== next.id && h.start > victimDone.letGoAt && h.overwrote !== undefined);
      if (!secondHolderWrote) return;
      letNextGo("another holder took its lock and wrote");
    } else {
      letNextGo("the woken holder's write landed");
    }
  }

  function letNextGo(why) {
    if (next === null || next.released) return;
    next.released = true;
    clearTimeout(next.timer);
    tell(next.shop, { t: "go", id: next.id });
    events.push({ kind: "held", instance: next.shop.index, at: next.at, until: stamp(), point: fault.next, why });
  }

  function resume(why) {
    if (pause.at === null) return;
    for (const timer of pause.timers) clearTimeout(timer);
    pause.timers = [];
    pause.at = null;
    if (fault.next && next === null) for (const s of shops) tell(s, { t: "disarm", point: fault.next });
    victim().child.kill("SIGCONT");
    events.push({ kind: "resume", instance: fault.instance, at: stamp(), why });
    progress("burst", { sold: sales.total, note: `SIGCONT instance ${fault.instance} (${why})` });
  }

  let balancer;
  let balancerName;
  let burst;
  try {
    for (let i = 0; i < o.instances; i++) shops.push(startShop(i));
    const ports = await within(Promise.all(shops.map((s) => s.ready)), 15_000, "starting the shop instances", o.signal);
    const backends = ports.map((port, i) => ({ id: i, port }));
    balancer = env.nginx === undefined
      ? { name: "the demo's own round-robin balancer", ...(await startBalancer({ backends })) }
      : await startNginx({ binary: env.nginx, backends, connections: Math.min(o.connections, o.buyers), onSpawn: (child) => children.add(child, "nginx") });

    // --- the burst -----------------------------------------------------------------------------
    const burstAt = stamp();
    const statuses = {};
    let answered = 0;
    progress("burst", { sold: 0 });
    burst = await new Promise((resolve, reject) => {
      const cannon = autocannon({
        url: `${balancer.url}/buy`,
        method: "POST",
        connections: Math.min(o.connections, o.buyers),
        amount: o.buyers,
        timeout: 10,
      }, (error, result) => (error ? reject(error) : resolve(result)));
      cannon.on("response", (_client, status) => {
        statuses[status] = (statuses[status] ?? 0) + 1;
        answered++;
        progress("burst", { sold: sales.total, answered, buyers: o.buyers });
      });
      o.signal?.addEventListener("abort", () => cannon.stop(), { once: true });
    });
    o.signal?.throwIfAborted();
    const burstEnd = stamp();
    resume("the burst is over");
    letNextGo("the burst is over");

    // --- stop the instances and see what is left -------------------------------------------------
    stopping = true;
    progress("stopping");
    balancerName = balancer.name;
    await balancer.close();
    balancer = undefined;
    await Promise.all(shops.map(async (shop) => {
      if (!Children.alive(shop.child)) return;
      tell(shop, { t: "stop" });
      await within(shop.exited, 3_000, `stopping shop ${shop.index}`).catch(() => {
        shop.child.kill("SIGKILL");
        return shop.exited;
      });
    }));
    const stoppedAt = stamp();
    for (const hold of holds.values()) {
      if (hold.end === undefined) Object.assign(hold, { end: stoppedAt, outcome: hold.outcome ?? "unfinished" });
      hold.believedUntil ??= hold.end;
    }
    if (problems.length > 0) throw problems[0];

    const accepted = await client.llen(keys.orders);
    const unitsLeft = Number(await client.get(keys.units));
    const keysWithoutTtl = [];
    const data = new Set(dataKeys(ns));
    for (const key of await scanAll(client, `${ns}:*`)) {
      if (!data.has(key) && (await client.pttl(key)) === -1) keysWithoutTtl.push(key);
    }
    await unlinkAll(client, `${ns}:*`);

    const holdList = [...holds.values()].sort((a, b) => a.start - b.start);
    const beliefs = holdList.map((h) => ({ start: h.start, end: h.believedUntil }));
    const staleWrites = holdList.filter(isStaleWrite);
    const victimHold = fault?.requestId === undefined ? undefined : holds.get(fault.requestId);
    const held = events.find((e) => e.kind === "held");
    const latency = burst.latency ?? {};
    return {
      strategy: name,
      summary: strategy.summary,
      balancer: balancerName,
      instances: o.instances,
      stock: o.stock,
      buyers: o.buyers,
      accepted,
      oversold: Math.max(0, accepted - o.stock),
      unitsLeft,
      writes: holdList.filter((h) => h.overwrote !== undefined).length,
      staleWrites: staleWrites.length,
      // Orders the counter does not account for. Every write sets it to (what its writer read) - 1,
      // so this is the sum over all writes of (read - value replaced): only stale writes add to it.
      salesUndone: accepted - (o.stock - unitsLeft),
      locksWithoutTtl: keysWithoutTtl.length,
      keysWithoutTtl,
      doubleHolders: strategy.lock === false ? null : countDoubleHolders(beliefs),
      overlaps: overlapSegments(beliefs),
      staleWritesRefused: holdList.filter((h) => h.outcome === "stale-refused").length,
      releasesRefused: holdList.filter((h) => h.releaseError).length,
      latencyMs: { p50: latency.p50 ?? null, p99: latency.p99 ?? null },
      statuses,
      fault: fault && {
        kind: fault.kind, at: fault.at, where: fault.where ?? null, next: fault.next ?? null, instance: fault.instance, injected: fault.injected,
        armAfterSales: fault.armAfterSales,
        victim: victimHold === undefined ? null : {
          outcome: victimHold.outcome,
          heldAtWrite: victimHold.heldAtWrite ?? null,
          staleWrite: isStaleWrite(victimHold),
          undid: undidBy(victimHold),
        },
        held: held === undefined ? null : { instance: held.instance, point: held.point, ms: held.until - held.at },
      },
      holds: holdList,
      events,
      window: { start: burstAt, end: Math.max(burstEnd, ...holdList.map((h) => h.end)) },
      pids: shops.map((s) => s.pid),
    };
  } finally {
    stopping = true;
    for (const timer of pause.timers) clearTimeout(timer);
    if (next !== null) clearTimeout(next.timer);
    await balancer?.close();
    await Promise.all(shops.map(async (shop) => {
      if (!Children.alive(shop.child)) return;
      shop.killed = true;
      shop.child.kill("SIGKILL");
      await shop.exited;
    }));
  }
}

/** A write of the stock counter that landed on a value other than the one its writer had read. */
const isStaleWrite = (hold) => hold.overwrote !== undefined && hold.overwrote !== hold.read;

/** The sales a stale write wiped off the counter: decrements made by others since its read. */
const undidBy = (hold) => (isStaleWrite(hold) ? Math.max(0, hold.read - (hold.overwrote ?? hold.read)) : 0);

async function scanAll(client, pattern) {
  const found = [];
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", pattern, "COUNT", 500);
    cursor = next;
    found.push(...batch);
  } while (cursor !== "0");
  return found;
}

async function unlinkAll(client, pattern) {
  const found = await scanAll(client, pattern);
  if (found.length > 0) await client.unlink(...found);
}
