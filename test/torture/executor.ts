/**
 * Runs planned operations against surelock's PUBLIC API and writes down what happened: each call
 * (invoke, then ok or fail), each lease (with its token, owner and parent), every look at a
 * lease, each guarded write and counter update. Nothing here judges; the checkers do.
 */
import type { Cluster, Redis } from "ioredis";
import type { Lease, Lockable, Surelock } from "../../src/index.js";
import { errorInfo, type CallOp, type Prim } from "./history.js";
import type { Ending, Op, Section, Step, Target } from "./plan.js";
import { abortListeners, type LeaseWatch, type Recorder } from "./recorder.js";

export interface ExecEnv {
  readonly rec: Recorder;
  readonly watch: LeaseWatch;
  /** The worker's Surelock instances; an entry is replaced after a close() operation. */
  readonly instances: Surelock[];
  readonly instanceTtls: readonly number[];
  /** Makes a fresh instance to replace one that was closed. */
  readonly replace: (index: number) => Surelock;
  /** Where counters live (the lock client, or quorum mode's data server). */
  readonly data: Redis | Cluster;
  readonly guards: boolean;
  /** The longest an operation that talks to Redis may take beyond its own timeout. */
  readonly slackMs: number;
  /** Deadline of the worker's own commands (counters), like surelock's commandTimeout. */
  readonly commandTimeoutMs: number;
  /** Work started by a section that outlives it (late jobs); awaited before the worker closes. */
  readonly pending: Set<Promise<void>>;
}

interface Held {
  readonly id: string;
  readonly lease: Lease;
  readonly target: Target;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Rejects after `ms`: for calls on our own clients, which ioredis may never settle after a reset. */
function deadline<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

export const counterKey = (target: Target): string => `t:{${target.key}}:${target.prim}-counter`;
export const guardResource = (key: string): string => `res-${key}`;
export const guardLog = (key: string): string => `{${guardResource(key)}}:log`;

export class Executor {
  readonly #env: ExecEnv;

  constructor(env: ExecEnv) {
    this.#env = env;
  }

  async run(op: Op): Promise<void> {
    switch (op.op) {
      case "idle":
        return sleep(op.ms);
      case "close":
        return this.#close(op.instance, op.delayMs);
      case "section":
        return this.section(op.section, undefined, false);
    }
  }

  /** Invokes `fn` as a recorded call; resolves with its value, or undefined if it failed. */
  async #call<T>(
    op: CallOp, what: { key?: string; prim?: Prim; lease?: string; args?: Record<string, string | number | boolean> },
    boundMs: number | null, fn: (call: string) => Promise<T>, describe: (value: T) => string | number | boolean | null = () => null,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    const rec = this.#env.rec;
    const call = rec.callId();
    rec.emit({ type: "invoke", call, op, boundMs, ...what });
    try {
      const value = await fn(call);
      rec.emit({ type: "ok", call, value: describe(value) });
      return { ok: true, value };
    } catch (error) {
      rec.emit({ type: "fail", call, error: errorInfo(error) });
      return { ok: false, error };
    }
  }

  async #close(index: number, delayMs: number): Promise<void> {
    await sleep(delayMs);
    const locks = this.#env.instances[index] as Surelock;
    await this.#call("close", { args: { instance: index } }, this.#env.slackMs * 2, () => locks.close());
    this.#env.instances[index] = this.#env.replace(index);
  }

  #primitive(locks: Surelock, target: Target): Lockable {
    switch (target.prim) {
      case "mutex":
        if (target.with !== undefined) return locks.multiLock([target.key, target.with], target.ttl === undefined ? {} : { ttl: target.ttl });
        return locks.mutex(target.key, { fair: target.fair, ...(target.ttl !== undefined && { ttl: target.ttl }) });
      case "read": return locks.readWriteLock(target.key, target.ttl === undefined ? {} : { ttl: target.ttl }).read();
      case "write": return locks.readWriteLock(target.key, target.ttl === undefined ? {} : { ttl: target.ttl }).write();
      case "sem": return locks.semaphore(target.key, { permits: target.permits, ...(target.ttl !== undefined && { ttl: target.ttl }) });
    }
  }

  /** One section: acquire as planned, run its steps, end it as planned. */
  async section(s: Section, parent: string | undefined, late: boolean): Promise<void> {
    const env = this.#env;
    const a = s.acquire;
    const ttl = s.target.ttl ?? env.instanceTtls[s.instance] ?? 1_000;
    const args: Record<string, string | number | boolean> = { instance: s.instance, ttl, ...(late && { late }) };
    if (a.how !== "tryAcquire") {
      if (a.timeout !== undefined) args.timeout = a.timeout;
      if (a.signalMs !== undefined) args.signalMs = a.signalMs;
    }
    if (a.owner !== undefined) args.owner = a.owner;
    if (s.target.prim === "mutex" && s.target.with !== undefined) args.with = s.target.with;
    const waitMs = a.how === "tryAcquire" ? 0 : Math.min(a.timeout ?? Infinity, a.signalMs ?? Infinity);
    const boundMs = waitMs === Infinity ? null : waitMs + env.slackMs;

    const controller = a.how !== "tryAcquire" && a.signalMs !== undefined ? new AbortController() : undefined;
    let signalTimer: NodeJS.Timeout | undefined;
    let held: Held | undefined;
    let acquireCall = "";
    const adopt = (lease: Lease, call: string): Held => {
      held = this.#adopt(lease, call, s, ttl, parent, late);
      return held;
    };
    const what = { key: s.target.key, prim: s.target.prim, args };
    try {
      const locks = env.instances[s.instance] as Surelock;
      const primitive = this.#primitive(locks, s.target);
      if (controller) {
        signalTimer = setTimeout(() => controller.abort(new Error("planned abort")), (a as { signalMs: number }).signalMs);
      }
      const options = {
        ...(a.how !== "tryAcquire" && a.timeout !== undefined && { timeout: a.timeout }),
        ...(controller && { signal: controller.signal }),
        ...(a.owner !== undefined && { owner: a.owner }),
      };
      if (a.how === "withLock") {
        await this.#call("withLock", what, boundMs, (call) => {
          acquireCall = call;
          if (controller) this.#noteSignal(controller.signal, call);
          return primitive.withLock(async (lease) => {
            const h = adopt(lease, call);
            await this.#steps(s, h);
            // The section ends here: what follows is withLock's release, no longer the holder's work.
            env.watch.observe(h.id, "end");
            env.watch.remove(h.id);
          }, options);
        });
        return;
      }
      const got = await this.#call(a.how, what, boundMs, (call) => {
        acquireCall = call;
        if (controller) this.#noteSignal(controller.signal, call);
        const p = a.how === "acquire" ? primitive.acquire(options) : primitive.tryAcquire(a.owner === undefined ? {} : { owner: a.owner });
        return p.then((lease) => (lease === null ? null : adopt(lease, call)));
      }, (h) => (h === null ? null : h.id));
      if (!got.ok || got.value === null) return;
      const h = got.value;
      await this.#steps(s, h);
      env.watch.observe(h.id, "end");
      // A holder that calls release() has left its section (held stays true until the release settles).
      env.watch.remove(h.id);
      await this.#end(h, a.end);
    } catch (error) {
      // Only a section that could not even start lands here (e.g. mutex() after close()).
      env.rec.emit({ type: "note", text: `section on ${s.target.key} did not start: ${errorInfo(error).message}` });
    } finally {
      clearTimeout(signalTimer);
      if (controller && !controller.signal.aborted) {
        // The call settled: surelock must have taken its listeners off the caller's signal (the one
        // left is ours, from #noteSignal).
        const left = abortListeners(controller.signal) - 1;
        if (left > 0) env.rec.emit({ type: "listener-leak", call: acquireCall, count: left });
      }
      if (held) {
        env.watch.remove(held.id);
        env.rec.emit({ type: "end", lease: held.id });
      }
    }
  }

  /** Writes down when the caller's signal fires (the listener check counts this one out). */
  #noteSignal(signal: AbortSignal, call: string): void {
    signal.addEventListener("abort", () => this.#env.rec.emit({ type: "signal", call }), { once: true });
  }

  #adopt(lease: Lease, call: string, s: Section, ttl: number, parent: string | undefined, late: boolean): Held {
    const env = this.#env;
    const id = env.rec.leaseId();
    env.rec.emit({
      type: "lease", call, lease: id, key: s.target.key, prim: s.target.prim, token: lease.fencingToken.toString(),
      owner: lease.owner, instance: s.instance, ttl,
      ...(parent !== undefined && { parent }), ...(late && { late }),
      ...(s.target.prim === "sem" && { permits: s.target.permits }),
      ...(s.target.prim === "mutex" && s.target.with !== undefined && {
        keys: [...lease.fencingTokens.keys()], tokens: [...lease.fencingTokens.values()].map(String),
      }),
    });
    env.watch.add(id, lease);
    return { id, lease, target: s.target };
  }

  async #end(h: Held, how: Ending): Promise<void> {
    const times = how === "release-twice" ? 2 : 1;
    for (let i = 0; i < times; i++) {
      await this.#call("release", { key: h.target.key, prim: h.target.prim, lease: h.id, args: { via: how, nth: i + 1 } },
        this.#env.slackMs, () => (how === "dispose" ? h.lease[Symbol.asyncDispose]() : h.lease.release()));
    }
  }

  async #steps(s: Section, h: Held): Promise<void> {
    for (const step of s.steps) await this.#step(step, s, h);
  }

  async #step(step: Step, s: Section, h: Held): Promise<void> {
    const env = this.#env;
    const on = { key: s.target.key, prim: s.target.prim, lease: h.id };
    switch (step.do) {
      case "work":
        return sleep(step.ms);
      case "counter":
        return this.#counter(s.target, h, step.gapMs);
      case "guard": {
        if (!env.guards) return;
        const locks = env.instances[s.instance] as Surelock;
        const writeId = env.rec.writeId();
        const token = h.lease.fencingToken;
        const r = await this.#call("guard", { ...on, args: { writeId } }, env.slackMs, () =>
          locks.guard(guardResource(s.target.key)).write(token, "RPUSH", guardLog(s.target.key), `${writeId}:${token}`),
        (w) => w.written);
        const outcome = r.ok ? (r.value.written ? "written" : "refused") : "unknown";
        env.rec.emit({ type: "guard", lease: h.id, resource: guardResource(s.target.key), writeId, token: token.toString(), outcome });
        return;
      }
      case "extend": {
        const r = await this.#call("extend", { ...on, args: { ttl: step.ttl ?? "same" } }, env.slackMs, () => h.lease.extend(step.ttl));
        if (r.ok) env.watch.observe(h.id, "extend");
        return;
      }
      case "isHeld": {
        const r = await this.#call("isHeld", on, env.slackMs, () => h.lease.isHeld(), (v) => v);
        if (r.ok) env.watch.observe(h.id, "isHeld");
        return;
      }
      case "nest":
        return this.section(step.section, h.id, false);
      case "fork":
        await Promise.all(step.branches.map((b) => this.section(b, h.id, false)));
        return;
      case "later":
        for (const job of step.jobs) {
          // Scheduled here, inside the section's async context; they start after it ended.
          const done = new Promise<void>((resolve) => {
            const start = (): void => void this.section(job, h.id, true).finally(resolve);
            if (step.via === "immediate") setImmediate(start);
            else setTimeout(start, step.delayMs);
          });
          env.pending.add(done);
          void done.finally(() => env.pending.delete(done));
        }
        return;
      case "foreign": {
        const other = env.instances[(s.instance + 1) % env.instances.length] as Surelock;
        const r = await this.#call("foreign-try", on, env.slackMs, async (call) => {
          const lease = await other.mutex(s.target.key).tryAcquire();
          return lease === null ? null : { lease, call };
        }, (v) => (v === null ? null : v.lease.fencingToken.toString()));
        if (r.ok && r.value !== null) {
          // Another instance got a lock this flow holds: keep it as a lease, so the checkers see it.
          const otherIndex = (s.instance + 1) % env.instances.length;
          const ttl = s.target.ttl ?? env.instanceTtls[otherIndex] ?? 1_000;
          const foreign = this.#adopt(r.value.lease, r.value.call, { ...s, instance: otherIndex }, ttl, h.id, false);
          env.watch.observe(foreign.id, "end");
          env.watch.remove(foreign.id);
          await this.#end(foreign, "release");
          env.rec.emit({ type: "end", lease: foreign.id });
        }
        return;
      }
    }
  }

  /** GET, (gap), SET +1 of the lock's plain counter; the write only while the lease looks held. */
  async #counter(target: Target, h: Held, gapMs: number): Promise<void> {
    if (target.prim !== "mutex" && target.prim !== "write") return;
    const env = this.#env;
    const key = counterKey(target);
    const on = { key: target.key, prim: target.prim, lease: h.id };
    const read = await this.#call("counter-get", on, env.slackMs, () => deadline(env.commandTimeoutMs, env.data.get(key)), (v) => v);
    if (!read.ok) return;
    const value = Number(read.value ?? 0);
    if (gapMs > 0) await sleep(gapMs);
    if (!env.watch.observe(h.id, "before-write")) {
      env.rec.emit({ type: "counter", lease: h.id, key, read: value, wrote: value + 1, outcome: "skipped" });
      return;
    }
    const wrote = await this.#call("counter-set", on, env.slackMs, () => deadline(env.commandTimeoutMs, env.data.set(key, String(value + 1))));
    env.rec.emit({ type: "counter", lease: h.id, key, read: value, wrote: value + 1, outcome: wrote.ok ? "ok" : "unknown" });
    env.watch.observe(h.id, "after-write");
  }
}
