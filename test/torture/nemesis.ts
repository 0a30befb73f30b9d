/**
 * The nemesis: a fault schedule drawn from the run's seed before the run starts (so a seed
 * always plans the same faults at the same offsets), and the executor that carries it out
 * against real processes and the proxies, writing every fault into the history. A fault that
 * cannot be carried out when its time comes (its node is already down, or it would take down a
 * quorum's majority) is skipped, and the skip is written down too.
 */
import { namesOf, type FaultClass } from "../helpers/script-catalog.js";
import type { HealMode } from "../helpers/fault-proxy.js";
import type { DataNode, Deployment } from "./deployment.js";
import type { FaultEvent, FaultKind, Unstamped } from "./history.js";
import type { DeploymentKind } from "./plan.js";
import type { Rng } from "./prng.js";

/** A node by index, or by role (Sentinel: whichever is primary when the fault starts). */
export type NodeRef = number | "primary";

export type Fault =
  | { readonly kind: "pause-worker"; readonly worker: number; readonly ms: number }
  | { readonly kind: "pause-node"; readonly node: NodeRef; readonly ms: number }
  | { readonly kind: "kill-node"; readonly node: NodeRef; readonly downMs: number }
  | { readonly kind: "latency"; readonly node: NodeRef | "all"; readonly up: number; readonly down: number; readonly ms: number }
  | { readonly kind: "blackhole"; readonly node: NodeRef; readonly ms: number; readonly heal: HealMode }
  | { readonly kind: "reset"; readonly node: NodeRef | "all" }
  | { readonly kind: "cut"; readonly node: NodeRef | "all"; readonly classes: readonly FaultClass[]; readonly withinMs: number }
  | { readonly kind: "failover" }
  | { readonly kind: "wakeups"; readonly node: NodeRef | "all"; readonly ms: number; readonly heal: "deliver" | "lose" }
  | { readonly kind: "stall"; readonly node: NodeRef; readonly ms: number; readonly pick: number }
  /**
   * A grant heard of after it lapsed: one node's wake-ups held (up to `withinMs`) until a release
   * grants a lock to a waiter; that waiter's command connection (the one its ticket was last sent
   * on) then stalls until `afterMs` past the grant's PTTL, so that no refresh of it runs while the
   * grant lasts and the next ones run after it lapsed (the lock's hash, counter and all, gone with
   * it); the wake-ups, the announcement among them, come `lateMs` after that, or are lost.
   */
  | { readonly kind: "late-wakeup"; readonly node: NodeRef; readonly withinMs: number; readonly afterMs: number; readonly lateMs: number; readonly heal: "deliver" | "lose" };

export interface ScheduledFault {
  readonly at: number;
  readonly fault: Fault;
}

export interface NemesisScope {
  readonly deployment: DeploymentKind;
  readonly nodes: number;
  readonly workers: number;
  readonly durationMs: number;
  /** Longest lease ttl in use: pauses and outages are drawn around it. */
  readonly maxTtlMs: number;
}

/** Mean gap between two faults. */
const MEAN_GAP_MS = 1_200;

/** The whole schedule of a run, from its PRNG only. */
export function planFaults(rng: Rng, scope: NemesisScope): ScheduledFault[] {
  const out: ScheduledFault[] = [];
  const ttl = scope.maxTtlMs;
  const node = (): NodeRef => (scope.deployment === "sentinel" && rng.chance(0.7) ? "primary" : rng.int(0, scope.nodes - 1));
  const anyNode = (): NodeRef | "all" => (rng.chance(0.3) ? "all" : node());
  const weights: [Exclude<FaultKind, "wakeups" | "stall" | "late-wakeup">, number][] = [
    ["cut", 26], ["latency", 18], ["pause-worker", 10], ["reset", 7], ["blackhole", 12],
    ["pause-node", 8], ["kill-node", 6], ["failover", scope.deployment === "sentinel" ? 4 : 0],
  ];
  for (let at = rng.exponential(MEAN_GAP_MS); at < scope.durationMs; at += rng.exponential(MEAN_GAP_MS)) {
    const kind = rng.weighted(weights);
    let fault: Fault;
    switch (kind) {
      case "pause-worker":
        fault = { kind, worker: rng.int(0, scope.workers - 1), ms: rng.chance(0.5) ? rng.int(20, ttl / 2) : rng.int(ttl / 2, 2 * ttl) };
        break;
      case "pause-node":
        fault = { kind, node: node(), ms: rng.int(50, Math.round(1.5 * ttl)) };
        break;
      case "kill-node":
        fault = { kind, node: node(), downMs: rng.int(0, 1_500) };
        break;
      case "latency":
        fault = { kind, node: anyNode(), up: rng.int(0, 40), down: rng.int(0, 40), ms: rng.int(500, 4_000) };
        break;
      case "blackhole":
        fault = { kind, node: node(), ms: rng.int(100, Math.round(1.5 * ttl)), heal: rng.chance(0.6) ? "deliver" : "reset" };
        break;
      case "reset":
        fault = { kind, node: anyNode() };
        break;
      case "cut": {
        // Releases matter most (a replayed release frees a lock); then acquires, renewals, fences.
        const cls = rng.weighted<FaultClass>([
          ["release-like", 45], ["acquire-like", 20], ["renew-like", 15], ["fence-like", 12], ["check-like", 8],
        ]);
        fault = { kind, node: anyNode(), classes: [cls], withinMs: rng.int(200, 3_000) };
        break;
      }
      case "failover":
        fault = { kind };
        break;
    }
    out.push({ at: Math.round(at), fault });
  }
  return out;
}

/** Mean gap between two faults of the wake-up schedule. */
const WAKEUP_MEAN_GAP_MS = 1_500;

/**
 * A second schedule, from a PRNG of its own (so the seeds recorded before it keep their first
 * schedule): wake-up messages held and delivered late or lost, one command connection stalled,
 * and both at once, aimed at a granted waiter, with the stall ending first (issue 24: a grant
 * learned of after it lapsed): the wake-ups stay held long enough after the stall for another
 * waiter's refresh to find the lock free and take it.
 */
export function planWakeupFaults(rng: Rng, scope: NemesisScope): ScheduledFault[] {
  const out: ScheduledFault[] = [];
  const ttl = scope.maxTtlMs;
  const node = (): NodeRef => (scope.deployment === "sentinel" && rng.chance(0.7) ? "primary" : rng.int(0, scope.nodes - 1));
  for (let at = rng.exponential(WAKEUP_MEAN_GAP_MS); at < scope.durationMs; at += rng.exponential(WAKEUP_MEAN_GAP_MS)) {
    const kind = rng.weighted([["wakeups", 3], ["stall", 3], ["late-wakeup", 4]] as const);
    let fault: Fault;
    switch (kind) {
      case "wakeups":
        fault = { kind, node: rng.chance(0.3) ? "all" : node(), ms: rng.int(50, 2 * ttl), heal: rng.chance(0.6) ? "deliver" : "lose" };
        break;
      case "stall":
        fault = { kind, node: node(), ms: rng.int(100, 2 * ttl), pick: rng.int(0, 1_000) };
        break;
      case "late-wakeup":
        fault = {
          // The stall ends right after the grant lapsed, before the next waiter's refresh finds
          // the lock free; the announcement arrives while the refresh the waiter sent last before
          // that (a third of its ticket lease after the previous one) could still vouch for it.
          kind, node: node(), withinMs: rng.int(500, 2 * ttl), afterMs: rng.int(0, 50), lateMs: rng.int(50, 600),
          heal: rng.chance(0.9) ? "deliver" : "lose",
        };
        break;
    }
    // None may still be under way when the workers stop: they close on their own clock at the
    // stop, and the orchestrator heals on its own timer, later on a loaded machine; a connection
    // still stalled then kept a closing worker's socket open (seed 104, quorum: a socket to node0
    // left after close()). A grant's PTTL is at most the longest ttl.
    const longest = fault.kind === "late-wakeup" ? fault.withinMs + ttl + fault.afterMs + fault.lateMs : fault.ms;
    if (at + longest + STOP_MARGIN_MS < scope.durationMs) out.push({ at: Math.round(at), fault });
  }
  return out;
}

/** How long before the stop every fault of the wake-up schedule has ended. */
const STOP_MARGIN_MS = 1_000;

export interface NemesisTargets {
  readonly deployment: Deployment;
  /** pids of the worker processes, by index. */
  readonly workerPids: readonly number[];
  readonly emit: (event: Unstamped) => void;
  readonly now: () => number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Sentinel's down-after-milliseconds in the topology helper, minus a margin. */
const SENTINEL_DOWN_AFTER_MS = 900;

/** Carries a schedule out; `heal()` ends every fault still under way. */
export class Nemesis {
  readonly #t: NemesisTargets;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  readonly #down = new Set<DataNode>();
  readonly #pausedWorkers = new Set<number>();
  /** Nodes whose wake-ups a fault holds now. */
  readonly #pushesHeld = new Set<DataNode>();

  #holdPushes(n: DataNode): void {
    this.#pushesHeld.add(n);
    n.proxy.holdPushes();
  }

  #releasePushes(n: DataNode, heal: "deliver" | "lose"): void {
    this.#pushesHeld.delete(n);
    n.proxy.releasePushes(heal);
  }
  #stopped = false;
  /** Faults carried out and skipped, for the report. */
  readonly counts: Record<string, number> = {};

  constructor(targets: NemesisTargets) {
    this.#t = targets;
  }

  /**
   * Every half second: a server that is not running although no fault of ours stopped it died
   * of something else (the machine, another process). Written down as an error of the
   * environment (so the run cannot pass silently) and restarted.
   */
  #monitor: NodeJS.Timeout | undefined;

  #watchServers(): void {
    this.#monitor = setInterval(() => {
      for (const n of this.#t.deployment.nodes) {
        if (n.server.alive || this.#down.has(n) || this.#restarting.has(n)) continue;
        this.#restarting.add(n);
        this.#t.emit({ type: "note", level: "error", text: `environment: ${n.name} (port ${n.server.port}) died outside the nemesis; restarting it` });
        void n.server.restart().catch(() => {}).finally(() => this.#restarting.delete(n));
      }
    }, 500);
  }

  readonly #restarting = new Set<DataNode>();

  start(schedule: readonly ScheduledFault[], origin: number): void {
    this.#watchServers();
    for (const s of schedule) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (this.#stopped) return;
        const run = this.#run(s.fault).catch((error: unknown) => {
          this.#emit(s.fault.kind, "skip", "?", { error: (error as Error).message });
        });
        this.#running.add(run);
        void run.finally(() => this.#running.delete(run));
      }, Math.max(0, origin + s.at - this.#t.now()));
      this.#timers.add(timer);
    }
  }

  #emit(fault: FaultKind, phase: FaultEvent["phase"], target: string, detail?: FaultEvent["detail"], dataLoss?: boolean): void {
    if (phase === "start" || phase === "skip") this.counts[`${fault}${phase === "skip" ? " (skipped)" : ""}`] = (this.counts[`${fault}${phase === "skip" ? " (skipped)" : ""}`] ?? 0) + 1;
    this.#t.emit({ type: "fault", fault, phase, target, ...(detail && { detail }), ...(dataLoss !== undefined && { dataLoss }) });
  }

  async #node(ref: NodeRef): Promise<DataNode | undefined> {
    if (ref === "primary") return this.#t.deployment.primary();
    return this.#t.deployment.nodes[ref];
  }

  async #nodes(ref: NodeRef | "all"): Promise<DataNode[]> {
    if (ref === "all") return [...this.#t.deployment.nodes];
    const n = await this.#node(ref);
    return n ? [n] : [];
  }

  /**
   * Whether taking `n` down for `ms` can lose acknowledged writes: a restart without persistence,
   * or (Sentinel) an outage of the primary long enough for a failover to a replica that may lag.
   */
  async #losesData(n: DataNode, kind: "kill" | "pause", ms: number): Promise<boolean> {
    if (kind === "kill" && !n.persistent) return true;
    const d = this.#t.deployment;
    return d.kind === "sentinel" && ms >= SENTINEL_DOWN_AFTER_MS && n === await d.primary();
  }

  /**
   * In quorum mode a stalled connection counts as its node down (one worker cannot reach it, and
   * two such faults at once left a worker without a majority: seed 34's calls over their bound);
   * elsewhere a stall goes with any other fault.
   */
  #mayImpair(n: DataNode): boolean {
    return this.#t.deployment.kind !== "quorum" || this.#mayTakeDown(n);
  }

  #impaired(n: DataNode, on: boolean): void {
    if (this.#t.deployment.kind !== "quorum") return;
    if (on) this.#down.add(n);
    else this.#down.delete(n);
  }

  /** A node fault may proceed: the node is up, and in quorum mode a majority stays up. */
  #mayTakeDown(n: DataNode): boolean {
    if (this.#down.has(n) || n.proxy.blackholed) return false;
    const d = this.#t.deployment;
    if (d.kind === "quorum") return this.#down.size + 1 <= Math.floor((d.nodes.length - 1) / 2);
    // Elsewhere one fault at a time per deployment keeps the run from being down most of the time.
    return this.#down.size === 0;
  }

  async #run(f: Fault): Promise<void> {
    switch (f.kind) {
      case "pause-worker": {
        const pid = this.#t.workerPids[f.worker];
        if (pid === undefined || this.#pausedWorkers.has(f.worker)) return this.#emit(f.kind, "skip", `worker${f.worker}`);
        this.#pausedWorkers.add(f.worker);
        this.#emit(f.kind, "start", `worker${f.worker}`, { ms: f.ms });
        try {
          process.kill(pid, "SIGSTOP");
          await sleep(f.ms);
        } finally {
          try { process.kill(pid, "SIGCONT"); } catch { /* it exited */ }
          this.#pausedWorkers.delete(f.worker);
          this.#emit(f.kind, "end", `worker${f.worker}`);
        }
        return;
      }
      case "pause-node": {
        const n = await this.#node(f.node);
        if (!n || !this.#mayTakeDown(n)) return this.#emit(f.kind, "skip", n?.name ?? String(f.node));
        this.#down.add(n);
        const loss = await this.#losesData(n, "pause", f.ms);
        this.#emit(f.kind, "start", n.name, { ms: f.ms }, loss);
        try {
          await n.server.pause();
          await sleep(f.ms);
        } finally {
          await n.server.resume();
          this.#down.delete(n);
          this.#emit(f.kind, "end", n.name, undefined, loss);
        }
        return;
      }
      case "kill-node": {
        const n = await this.#node(f.node);
        if (!n || !this.#mayTakeDown(n)) return this.#emit(f.kind, "skip", n?.name ?? String(f.node));
        this.#down.add(n);
        // Without persistence the server forgets its keys (locks included); with AOF always it does not.
        const loss = await this.#losesData(n, "kill", f.downMs + 500);
        this.#emit(f.kind, "start", n.name, { downMs: f.downMs, persistent: n.persistent }, loss);
        try {
          await n.server.kill();
          await sleep(f.downMs);
        } finally {
          let restarted = "restarted";
          await n.server.restart().catch((error: unknown) => {
            restarted = `restart failed: ${(error as Error).message.slice(0, 200)}`;
          });
          this.#down.delete(n);
          this.#emit(f.kind, "end", n.name, { persistent: n.persistent, outcome: restarted, pid: n.server.pid }, loss);
        }
        return;
      }
      case "latency": {
        const nodes = await this.#nodes(f.node);
        const name = f.node === "all" ? "all" : nodes[0]?.name ?? "?";
        this.#emit(f.kind, "start", name, { up: f.up, down: f.down, ms: f.ms });
        for (const n of nodes) n.proxy.setLatency(f.up, f.down);
        await sleep(f.ms);
        for (const n of nodes) n.proxy.setLatency(0, 0);
        this.#emit(f.kind, "end", name);
        return;
      }
      case "blackhole": {
        const n = await this.#node(f.node);
        if (!n || !this.#mayTakeDown(n)) return this.#emit(f.kind, "skip", n?.name ?? String(f.node));
        this.#down.add(n);
        this.#emit(f.kind, "start", n.name, { ms: f.ms, heal: f.heal });
        try {
          n.proxy.blackhole();
          await sleep(f.ms);
        } finally {
          n.proxy.heal(f.heal);
          this.#down.delete(n);
          this.#emit(f.kind, "end", n.name, { heal: f.heal });
        }
        return;
      }
      case "reset": {
        const nodes = await this.#nodes(f.node);
        this.#emit(f.kind, "start", f.node === "all" ? "all" : nodes[0]?.name ?? "?");
        for (const n of nodes) n.proxy.resetAll();
        return;
      }
      case "cut": {
        const nodes = await this.#nodes(f.node);
        const target = f.node === "all" ? "all" : nodes[0]?.name ?? "?";
        this.#emit(f.kind, "start", target, { classes: f.classes.join(","), withinMs: f.withinMs });
        const rule = { scripts: namesOf(...f.classes) };
        // One shot across the targeted proxies: the first match is cut, the other arms expire.
        const hits = await Promise.all(nodes.map((n) => n.proxy.cutReply(rule, f.withinMs)));
        for (const hit of hits) {
          if (hit) this.#emit(f.kind, "hit", hit.proxy, { script: hit.script ?? hit.command ?? null, key: hit.key ?? null });
        }
        return;
      }
      case "wakeups": {
        const nodes = (await this.#nodes(f.node)).filter((n) => !this.#pushesHeld.has(n));
        // One hold of a node's wake-ups at a time: an earlier one's end would release a later one's.
        if (nodes.length === 0) return this.#emit(f.kind, "skip", String(f.node));
        const name = f.node === "all" ? "all" : nodes[0]?.name ?? "?";
        for (const n of nodes) this.#holdPushes(n);
        this.#emit(f.kind, "start", name, { ms: f.ms, heal: f.heal });
        try {
          await sleep(f.ms);
        } finally {
          for (const n of nodes) this.#releasePushes(n, f.heal);
          this.#emit(f.kind, "end", name, { heal: f.heal });
        }
        return;
      }
      case "stall": {
        const n = await this.#node(f.node);
        if (!n || !this.#mayImpair(n)) return this.#emit(f.kind, "skip", n?.name ?? String(f.node));
        const connection = n.proxy.stall(f.pick);
        if (connection === null) return this.#emit(f.kind, "skip", n.name);
        this.#impaired(n, true);
        this.#emit(f.kind, "start", n.name, { ms: f.ms, connection });
        try {
          await sleep(f.ms);
        } finally {
          n.proxy.unstall();
          this.#impaired(n, false);
          this.#emit(f.kind, "end", n.name);
        }
        return;
      }
      case "late-wakeup": {
        const n = await this.#node(f.node);
        if (!n || this.#pushesHeld.has(n) || !this.#mayImpair(n)) return this.#emit(f.kind, "skip", n?.name ?? String(f.node));
        this.#impaired(n, true);
        this.#holdPushes(n);
        this.#emit(f.kind, "start", n.name, { withinMs: f.withinMs, afterMs: f.afterMs, lateMs: f.lateMs, heal: f.heal });
        let stop = (): void => {};
        try {
          // The first grant heard whose waiter's connection can be stalled: "g <ticket> <token> <pttl>".
          const grant = await new Promise<{ ticket: string; pttl: number; connection: string; lock: string } | undefined>((resolve) => {
            const timer = setTimeout(() => resolve(undefined), f.withinMs);
            stop = n.proxy.onMessage((payload, channel) => {
              const [kind, ticket, , pttl] = payload.split(" ");
              if (this.#stopped || kind !== "g" || ticket === undefined || pttl === undefined) return;
              const connection = n.proxy.stallSender(ticket);
              if (connection === null) return;
              clearTimeout(timer);
              // The lock's hash beside its channel: <prefix>:{key}:wake[:instance] -> <prefix>:{key}:lock.
              resolve({ ticket, pttl: Number(pttl), connection, lock: channel.replace(/:wake(:[^:]*)?$/, ":lock") });
            });
          });
          stop();
          if (!grant) return;
          this.#t.emit({ type: "note", text: `late-wakeup on ${n.name}: ticket ${grant.ticket} granted for ${grant.pttl} ms; connection ${grant.connection} stalled` });
          try {
            await sleep(grant.pttl + f.afterMs);
          } finally {
            n.proxy.unstall();
          }
          this.#t.emit({ type: "note", text: `late-wakeup on ${n.name}: connection ${grant.connection} unstalled, wake-ups still held` });
          // The announcement is worth most right after another waiter took the lock (which its
          // refresh does once the grant lapsed): watch the server for a new holder, up to `lateMs`.
          const until = performance.now() + f.lateMs;
          while (performance.now() < until) {
            const holder = await n.server.commandWithTimeout(500, "HGET", grant.lock, "h").catch(() => null);
            if (holder !== null && holder !== grant.ticket) {
              this.#t.emit({ type: "note", text: `late-wakeup on ${n.name}: ${grant.lock} taken by ${String(holder)}; wake-ups released` });
              break;
            }
            await sleep(5);
          }
        } finally {
          stop();
          this.#impaired(n, false);
          this.#releasePushes(n, f.heal);
          this.#emit(f.kind, "end", n.name, { heal: f.heal });
        }
        return;
      }
      case "failover": {
        const failover = this.#t.deployment.failover;
        if (!failover || this.#down.size > 0) return this.#emit(f.kind, "skip", "sentinel");
        // Replication is asynchronous: the promoted replica may lack the newest writes.
        this.#emit(f.kind, "start", "sentinel", undefined, true);
        await failover();
        return;
      }
    }
  }

  /** Stops the schedule and ends every fault under way (paused processes go on, killed ones restart). */
  async heal(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#monitor);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const n of this.#t.deployment.nodes) {
      n.proxy.setLatency(0, 0);
      n.proxy.heal("deliver");
      n.proxy.releasePushes("deliver");
      n.proxy.unstall();
    }
    for (const w of this.#pausedWorkers) {
      const pid = this.#t.workerPids[w];
      if (pid !== undefined) try { process.kill(pid, "SIGCONT"); } catch { /* gone */ }
    }
    // The faults under way end on their own within their (bounded) durations.
    await Promise.all([...this.#running]);
  }
}
