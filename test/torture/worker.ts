/**
 * A torture worker: a child process with its own Surelock instances and ioredis clients (every
 * connection through the fault proxies). It runs a few concurrent flows of planned operations
 * until told to stop, then closes everything and reports what it could not close.
 */
import { createHook } from "node:async_hooks";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { Socket } from "node:net";
import type { Cluster, Redis } from "ioredis";
import { Surelock, type ExtendMessage } from "../../src/index.js";
import { drained, makeClients, whenReady, type WorkerClients } from "./clients.js";
import { monoMs } from "./clock.js";
import { Executor, type ExecEnv } from "./executor.js";
import { errorInfo } from "./history.js";
import type { ClientSpec, FromWorker, ToWorker, WorkerConfig } from "./ipc.js";
import { joinAcross, nextOp, widen, type PlanScope } from "./plan.js";
import { deriveSeed, Rng } from "./prng.js";
import { LeaseWatch, Recorder } from "./recorder.js";

const send = (message: FromWorker): Promise<void> =>
  new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });

/** Active handles by type, as `process.getActiveResourcesInfo()` lists them. */
function resources(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1;
  return out;
}

function listenerCounts(clients: WorkerClients): Record<string, number> {
  const out: Record<string, number> = {};
  clients.all.forEach((c, i) => {
    for (const name of c.eventNames()) out[`client${i}:${String(name)}`] = c.listenerCount(name);
  });
  return out;
}

/**
 * Opt-in (TORTURE_TRACE_TIMERS=1, it slows every promise down): where each timer still keeping
 * the process alive at the end was created, to tell whose leak it is.
 */
const timerOrigins = new Map<number, { timer: { hasRef?: () => boolean }; stack: string }>();
if (process.env.TORTURE_TRACE_TIMERS === "1") {
  createHook({
    init(id, type, _trigger, resource) {
      if (type !== "Timeout") return;
      const frames = (new Error().stack ?? "").split("\n").slice(3)
        .filter((f) => !f.includes("node:internal") && !f.includes("node:timers")).slice(0, 3);
      timerOrigins.set(id, { timer: resource as { hasRef?: () => boolean }, stack: frames.map((f) => f.trim()).join(" < ") });
    },
    destroy(id) {
      timerOrigins.delete(id);
    },
  }).enable();
}

function liveTimerOrigins(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const { timer, stack } of timerOrigins.values()) {
    if (timer.hasRef?.() !== true) continue;
    const key = `timer from ${stack}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Names of the proxies a spec connects through, by port (to say whom a leftover socket talks to). */
function proxyNames(spec: ClientSpec): Map<number, string> {
  const names = new Map<number, string>();
  switch (spec.kind) {
    case "single": names.set(spec.node.port, "redis"); break;
    case "sentinel":
      spec.sentinels.forEach((s, i) => names.set(s.port, `sentinel${i}`));
      Object.entries(spec.natMap).forEach(([real, p]) => names.set(p.port, `data ${real}`));
      break;
    case "cluster": Object.entries(spec.natMap).forEach(([real, p]) => names.set(p.port, `shard ${real}`)); break;
    case "quorum": spec.nodes.forEach((n, i) => names.set(n.port, `node${i}`)); names.set(spec.data.port, "data"); break;
  }
  return names;
}

/** Open TCP sockets by peer ("TCP to sentinel1": 2), from Node's handle list. */
function socketsByPeer(names: Map<number, string>): Record<string, number> {
  const out: Record<string, number> = {};
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  for (const h of handles) {
    if (!(h instanceof Socket) || h.remotePort === undefined) continue;
    const peer = `TCP to ${names.get(h.remotePort) ?? `port ${h.remotePort}`}`;
    out[peer] = (out[peer] ?? 0) + 1;
  }
  return out;
}

/** What is in `after` beyond `before` (by key). */
function beyond(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) if (n > (before[k] ?? 0)) out[k] = n - (before[k] ?? 0);
  return out;
}

class Worker {
  readonly #config: WorkerConfig;
  readonly #rec: Recorder;
  readonly #watch: LeaseWatch;
  readonly #baseline = resources();
  #clients: WorkerClients | undefined;
  #env: ExecEnv | undefined;
  #listenersBefore: Record<string, number> = {};
  #stopAt = Infinity;
  #stopping = false;
  readonly #onExtend = (message: unknown): void => {
    const m = message as ExtendMessage;
    this.#rec.emit({ type: "renew", key: m.key, token: m.fencingToken.toString(), ttl: m.ttl, automatic: m.automatic });
  };

  constructor(config: WorkerConfig) {
    this.#config = config;
    this.#rec = new Recorder(config.index, send);
    this.#watch = new LeaseWatch(this.#rec);
  }

  async setUp(): Promise<void> {
    const c = this.#config;
    const rng = new Rng(deriveSeed(c.seed, "worker", c.index, "instances"));
    const ttls = [rng.int(300, 1_500), rng.int(300, 1_500)];
    const pollInterval = rng.pick([200, 500, 1_000]);
    const replicas = c.deployment === "sentinel" && rng.chance(0.3) ? { count: 1, timeout: 100 } : undefined;
    // Half the workers keep a freed lock's counter briefly (issue 24: counters that expire between
    // a grant and its use); from a PRNG of its own, so earlier seeds keep their instances.
    const retention = new Rng(deriveSeed(c.seed, "worker", c.index, "retention"));
    const counterRetention = retention.chance(0.5) ? 2 * c.commandTimeoutMs + retention.int(0, 1_000) : undefined;
    this.#clients = makeClients(c.spec, c.autoResend);
    await whenReady(this.#clients.all, 15_000);
    this.#listenersBefore = listenerCounts(this.#clients);
    const clients = this.#clients;
    const make = (index: number): Surelock => new Surelock({
      redis: clients.lockClients, ttl: ttls[index] as number, commandTimeout: c.commandTimeoutMs, pollInterval,
      ...(replicas && { replicas }), ...(counterRetention !== undefined && { counterRetention }),
    });
    this.#env = {
      rec: this.#rec, watch: this.#watch, instances: ttls.map((_, i) => make(i)), instanceTtls: ttls, replace: make,
      data: clients.data, guards: c.deployment !== "quorum", slackMs: c.slackMs, commandTimeoutMs: c.commandTimeoutMs,
      pending: new Set(),
    };
    subscribe("surelock:extend", this.#onExtend);
  }

  async run(origin: number, stopAt: number): Promise<void> {
    this.#stopAt = stopAt;
    this.#rec.start(origin);
    const env = this.#env as ExecEnv;
    const scope: PlanScope = { deployment: this.#config.deployment, keys: this.#config.keys, instanceTtls: env.instanceTtls };
    const executor = new Executor(env);
    const flows = Promise.all(Array.from({ length: this.#config.flows }, async (_, f) => {
      const rng = new Rng(deriveSeed(this.#config.seed, "worker", this.#config.index, "flow", f));
      const multi = new Rng(deriveSeed(this.#config.seed, "worker", this.#config.index, "flow", f, "multi"));
      const joins = new Rng(deriveSeed(this.#config.seed, "worker", this.#config.index, "flow", f, "join"));
      while (!this.#stopping && monoMs() < this.#stopAt) await executor.run(joinAcross(widen(nextOp(rng, scope), multi, scope), joins, scope));
    }));
    // Every operation ends within a few seconds of the stop (bounded waits, short sections) unless
    // something never settles: then close the instances, which rejects what still waits.
    let grace: NodeJS.Timeout | undefined;
    const stuck = new Promise<void>((resolve) => {
      const arm = (): void => { grace = setTimeout(resolve, Math.max(0, this.#stopAt - monoMs()) + STOP_GRACE_MS); };
      arm();
    });
    const finished = await Promise.race([flows.then(() => true), stuck.then(() => false)]);
    clearTimeout(grace);
    if (!finished) {
      this.#rec.emit({ type: "forced-close", open: this.#rec.openCalls });
      await Promise.all(env.instances.map((locks) => locks.close()));
      await Promise.race([flows, new Promise((r) => { grace = setTimeout(r, STOP_GRACE_MS); })]);
      clearTimeout(grace);
    }
    // Late jobs still running finish on their own (their acquisitions are bounded or get the lock);
    // close() below ends any that still wait.
    const until = monoMs() + 20_000;
    while (env.pending.size > 0 && monoMs() < until) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([...env.pending]), new Promise((r) => { timer = setTimeout(r, 1_000); })]);
      clearTimeout(timer);
    }
    await this.#finish();
  }

  stop(): void {
    this.#stopping = true;
  }

  async #finish(): Promise<void> {
    const env = this.#env as ExecEnv;
    const clients = this.#clients as WorkerClients;
    for (const [i, locks] of env.instances.entries()) {
      const call = this.#rec.callId();
      this.#rec.emit({ type: "invoke", call, op: "close", boundMs: env.slackMs * 2, args: { instance: i, final: true } });
      // A close() that hangs is written down as never settled (the liveness checker reports it).
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        locks.close().then(
          () => this.#rec.emit({ type: "ok", call }),
          (error: unknown) => this.#rec.emit({ type: "fail", call, error: errorInfo(error) }),
        ).then(() => true),
        new Promise<false>((r) => { timer = setTimeout(() => r(false), env.slackMs * 4); }),
      ]);
      clearTimeout(timer);
      if (!closed) this.#rec.emit({ type: "note", level: "error", text: `close() of instance ${i} did not settle` });
    }
    unsubscribe("surelock:extend", this.#onExtend);
    // ioredis keeps a 'ready' and a 'close' listener of its own while it reconnects: count once the
    // clients are connected again, as they were when the baseline was taken, and have answered
    // everything sent before (an adapter listens for 'close' while a call of its is on the wire).
    const settled = await whenReady(clients.all, 5_000).then(() => drained(clients.all, 5_000)).then(() => true, () => false);
    const listeners = settled ? beyond(this.#listenersBefore, listenerCounts(clients)) : {};
    if (!settled) this.#rec.emit({ type: "note", text: "a client did not reconnect and answer within 5 s: listeners not counted" });
    // Our own clients go last: whatever is left after that is something surelock kept open.
    const ended = new Set<Redis | Cluster>();
    await Promise.all(clients.all.map((c) => new Promise<void>((resolve) => {
      if (c.status === "end") {
        ended.add(c);
        return resolve();
      }
      const timer = setTimeout(resolve, 2_000); // a client that never says "end" shows up as a leak
      c.once("end", () => {
        ended.add(c);
        clearTimeout(timer);
        resolve();
      });
      c.disconnect();
    })));
    this.#rec.stopTimer();
    const handles = await this.#settledHandles();
    if (Object.keys(handles).length > 0) {
      Object.assign(handles, socketsByPeer(proxyNames(this.#config.spec)), liveTimerOrigins());
      clients.all.forEach((c, i) => { if (!ended.has(c)) handles[`client${i} never ended (status ${c.status})`] = 1; });
    }
    this.#rec.emit({ type: "leaks", handles, listeners });
    await this.#rec.flush();
  }

  /** Handles beyond the baseline, once closing sockets had a chance to finish closing (at most 2 s). */
  async #settledHandles(): Promise<Record<string, number>> {
    const until = monoMs() + 2_000;
    for (;;) {
      const extra = beyond(this.#baseline, resources());
      if (Object.keys(extra).length === 0 || monoMs() > until) return extra;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** How long after the stop a worker's flows may still run before it closes its instances. */
const STOP_GRACE_MS = 15_000;

let worker: Worker | undefined;

process.on("message", (message: ToWorker) => {
  void (async () => {
    switch (message.type) {
      case "config":
        worker = new Worker(message.config);
        await worker.setUp();
        await send({ type: "ready" });
        return;
      case "ping":
        await send({ type: "pong", id: message.id, at: monoMs() });
        return;
      case "go":
        await worker?.run(message.origin, message.stopAt);
        await send({ type: "done" });
        process.disconnect();
        return;
      case "stop":
        worker?.stop();
        return;
    }
  })().catch(async (error: unknown) => {
    await send({ type: "error", message: errorInfo(error).message });
    process.exit(1);
  });
});

// Nothing may escape surelock unhandled; if something does, the history says so.
process.on("unhandledRejection", (reason) => {
  // With where it came from: the error alone ("Connection is closed.") does not say whose promise it was.
  const stack = reason instanceof Error && reason.stack ? ` | ${reason.stack.split("\n").slice(1, 9).map((l) => l.trim()).join(" < ")}` : "";
  void send({ type: "error", message: `unhandled rejection: ${errorInfo(reason).name}: ${errorInfo(reason).message}${stack}` });
});
process.on("disconnect", () => {
  // The orchestrator is gone (or we are done): nothing to report to any more.
  process.exit(process.exitCode ?? 0);
});
