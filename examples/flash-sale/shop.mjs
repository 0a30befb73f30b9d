// One instance of the flash-sale shop: an HTTP service that sells from a stock counter in Redis
// under the chosen strategy. Started by run.mjs with fork(); configured by the FLASH_SALE
// environment variable (JSON); reports to the orchestrator over the IPC channel:
//   ready {port}           listening
//   begin {id, at}         this request now holds the lock (its acquire returned)
//   end   {id, at, ...}    ...and let go of it at `at`; believedUntil, what it read and
//                          overwrote, and the outcome
//   gate  {id, point, at}  waiting at an armed fault point for the orchestrator's go
//   bye                    stopped, every report sent
// Times are ms on the machine's monotonic clock, relative to the orchestrator's base.

import http from "node:http";
import process from "node:process";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import Redis from "ioredis";
import { LockLostError, Surelock } from "../../dist/index.js";
import { STRATEGIES, keysFor } from "./strategies.mjs";
import { random } from "./random.mjs";

const config = JSON.parse(process.env.FLASH_SALE ?? "{}");
const strategy = STRATEGIES[config.strategy];
if (!strategy || typeof process.send !== "function") {
  console.error("shop.mjs is started by examples/flash-sale/run.mjs (npm run demo)");
  process.exit(2);
}

const base = BigInt(config.clockBase);
const stamp = () => Number(process.hrtime.bigint() - base) / 1e6;
const send = (message) => { if (process.connected) process.send(message); };
const rand = random(config.seed * 1000 + config.index);
const between = ([lo, hi]) => lo + rand() * (hi - lo);

const keys = keysFor(config.ns);
const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 });
redis.on("error", () => {}); // commands reject on their own (and the purchase answers 500)
const locks = config.strategy.startsWith("surelock")
  ? new Surelock({ redis, prefix: config.ns, ttl: config.ttlMs, pollInterval: 50 })
  : undefined;
const mutex = locks?.mutex("stock");
const guard = locks?.guard("stock");

// Fault points armed by the orchestrator (only honoured when the demo runs with faults).
const armed = new Set();
const gates = new Map();
process.on("message", (message) => {
  if (message.t === "arm" && config.faults) armed.add(message.point);
  else if (message.t === "disarm") armed.delete(message.point);
  else if (message.t === "go") gates.get(message.id)?.();
  else if (message.t === "stop") void stop();
});
// The orchestrator is gone (it was killed, or it stopped us): nothing left to serve.
process.on("disconnect", () => process.exit(0));

let seq = 0;

async function purchase() {
  // A cheap look before queueing for the lock: no lock is needed to see that it is sold out.
  if (Number(await redis.get(keys.units)) <= 0) return [409, { result: "sold-out" }];

  const id = `${config.index}.${++seq}`;
  let hold;
  let believedUntil;
  let endAt;
  let writeAt;
  let heldAtWrite;
  // What the holder believes whenever it looks: it holds the lock from its acquire until it lets
  // go, as long as its lease (if it has one) says so. lease.held never turns true again once
  // false, so the holder believed it throughout [acquire, believedUntil].
  const look = () => {
    if (hold === undefined) return false;
    const held = hold.lease ? hold.lease.held : true;
    if (held) believedUntil = stamp();
    return held;
  };
  const ctx = {
    redis, keys, mutex, guard,
    owner: `${config.index}:${seq}:${randomBytes(6).toString("hex")}`,
    ttlMs: config.ttlMs,
    acquireTimeoutMs: config.acquireTimeoutMs,
    spinPause: () => sleep(between(config.spinMs)),
    writing: () => {
      heldAtWrite = look();
      writeAt = stamp();
    },
    letGo: () => {
      if (endAt !== undefined) return;
      look();
      endAt = stamp();
    },
    gate(point) {
      if (!armed.delete(point)) return undefined;
      look();
      send({ t: "gate", id, point, at: stamp(), holding: hold !== undefined });
      return new Promise((resolve) => gates.set(id, resolve));
    },
  };

  const acquired = await strategy.acquire(ctx);
  if (acquired === null) return [503, { result: "busy", detail: "lock wait timed out" }];
  hold = acquired;
  const beginAt = stamp();
  look();
  send({ t: "begin", id, at: beginAt });
  let lostAt;
  hold.lease?.signal.addEventListener("abort", () => { lostAt = stamp(); }, { once: true });

  let outcome = "error";
  let units;
  let overwrote;
  let refusedAt;
  let releaseError;
  try {
    await ctx.gate("before-read"); // where the orchestrator holds the next holder during a fault
    if (hold.stale) {
      refusedAt = stamp();
      outcome = "stale-refused";
      return [409, { result: outcome }];
    }
    look();
    units = Number(await redis.get(keys.units));
    if (units <= 0) {
      outcome = "sold-out";
      return [409, { result: outcome }];
    }
    await sleep(between(config.thinkMs)); // the shop "thinks": payment checks, fraud rules, ...
    const write = await strategy.write(ctx, hold, units - 1);
    if (!write.written) {
      refusedAt = stamp();
      outcome = "stale-refused";
      return [409, { result: outcome }];
    }
    overwrote = write.overwrote === null || write.overwrote === undefined ? null : Number(write.overwrote);
    await redis.rpush(keys.orders, JSON.stringify({ id, instance: config.index, units }));
    outcome = "sold";
    return [200, { result: outcome, id }];
  } finally {
    try {
      await strategy.release(ctx, hold);
    } catch (error) {
      // LockLostError: the lease ran out before the release, so the section was not exclusive.
      releaseError = error instanceof LockLostError ? `lost (${error.reason})` : String(error?.message ?? error);
    }
    ctx.letGo(); // for strategies whose release has nothing to let go of
    send({
      t: "end", id, at: endAt, believedUntil: believedUntil ?? beginAt,
      outcome, read: units, overwrote, writeAt, heldAtWrite, refusedAt, lostAt, releaseError,
    });
  }
}

const server = http.createServer((req, res) => {
  const reply = (status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(`${JSON.stringify({ instance: config.index, ...body })}\n`);
  };
  if (req.url === "/health") return reply(200, { result: "ok" });
  if (req.method !== "POST" || !req.url.startsWith("/buy")) return reply(404, { result: "not-found" });
  req.resume();
  purchase().then(([status, body]) => reply(status, body), (error) => reply(500, { result: "error", detail: String(error?.message ?? error) }));
});

let stopping;
function stop() {
  stopping ??= (async () => {
    server.close();
    server.closeAllConnections();
    await locks?.close().catch(() => {});
    redis.disconnect();
    if (process.connected) process.send({ t: "bye" }, () => process.exit(0));
    else process.exit(0);
  })();
  return stopping;
}

server.listen(0, "127.0.0.1", () => send({ t: "ready", port: server.address().port }));
