// A real etcd cluster for tests: Debian's etcd-server, N members on free loopback ports, data in
// /dev/shm (fsync there is a memcpy, so a write commits in about a millisecond), stopped by pid.
// Clients reach each member through a switchboard (one TCP proxy per member's client port), so a
// test can cut a member off from its clients, stall a keep-alive, or kill the leader and restart it.
// With `peerLines`, the members also reach each other through a proxy in front of each member's peer
// port (what the others dial to send it Raft messages), so a member can be partitioned from its peers.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePorts } from "./redis-topology.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";
import { assertSlowTier } from "./tier.js";

const HOST = "127.0.0.1";

/** The etcd binary: $ETCD_BIN, else /usr/bin/etcd (Debian's etcd-server), else `etcd` on the PATH. */
export function etcdBinary(): string {
  if (process.env.ETCD_BIN) return process.env.ETCD_BIN;
  return existsSync("/usr/bin/etcd") ? "/usr/bin/etcd" : "etcd";
}

export interface EtcdMember {
  readonly name: string;
  /** The member's own client port (tests that bypass the switchboard). */
  readonly clientPort: number;
  readonly peerPort: number;
  /** The switchboard's line to this member: what clients connect to. */
  readonly proxy: FaultProxy;
  /** `host:port` through the switchboard. */
  readonly endpoint: string;
  readonly pid: number;
  readonly alive: boolean;
  /** Whether this member is the Raft leader now (asks the member itself). */
  isLeader(): Promise<boolean>;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** Starts it again on its data dir and ports, and waits until it is healthy. */
  restart(): Promise<void>;
  /**
   * Cuts this member off from its peers (`peerLines` only): every connection a peer opens to it
   * goes silent, and since a peer receives this member's Raft messages on a stream it opened to it,
   * the others hear nothing from it (no heartbeat, vote or ack; its clients' requests, which it must
   * forward to the leader, time out). Healing resets those connections, so peers dial afresh.
   */
  partition(on: boolean): void;
}

/** A private line to every member (proxies of its own): one client's faults, others untouched. */
export interface EtcdLine {
  readonly hosts: string[];
  readonly proxies: readonly FaultProxy[];
  /** Cuts (or restores) this line to every member: a client whose keep-alives stall. */
  cut(on: boolean): void;
}

export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's endpoint through the switchboard, for `new Etcd3({ hosts })`. */
  readonly hosts: string[];
  /** Opens a private line (closed with the cluster). */
  line(): Promise<EtcdLine>;
  leader(): Promise<EtcdMember>;
  stop(): Promise<void>;
}

export interface EtcdClusterOptions {
  readonly size?: number;
  /** Raft heartbeat in ms (etcd's default is 100); election timeout is ten of them. */
  readonly heartbeatMs?: number;
  /** Peer traffic through proxies, for `partition` (it costs the test process the Raft traffic's copying). */
  readonly peerLines?: boolean;
}

const running = new Set<Member>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", () => {
    for (const m of running) m.killSync();
  });
}

class Member implements EtcdMember {
  readonly endpoint: string;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #log = "";

  constructor(
    readonly name: string,
    readonly clientPort: number,
    readonly peerPort: number,
    readonly proxy: FaultProxy,
    /** The line in front of the peer port, when peers go through one: what the others dial. */
    readonly peerProxy: FaultProxy | undefined,
    readonly dir: string,
    readonly initialCluster: string,
    readonly heartbeatMs: number,
  ) {
    this.endpoint = `${HOST}:${proxy.port}`;
  }

  get pid(): number {
    return this.#child?.pid ?? -1;
  }
  get alive(): boolean {
    const c = this.#child;
    return !!c && c.exitCode === null && c.signalCode === null;
  }

  launch(): void {
    hookExit();
    const args = [
      "--name", this.name, "--data-dir", this.dir,
      "--listen-client-urls", `http://${HOST}:${this.clientPort}`,
      "--advertise-client-urls", `http://${HOST}:${this.clientPort}`,
      "--listen-peer-urls", `http://${HOST}:${this.peerPort}`,
      "--initial-advertise-peer-urls", `http://${HOST}:${this.peerProxy?.port ?? this.peerPort}`,
      "--initial-cluster", this.initialCluster,
      "--initial-cluster-state", "new",
      "--initial-cluster-token", path.basename(path.dirname(this.dir)),
      "--heartbeat-interval", String(this.heartbeatMs),
      "--election-timeout", String(this.heartbeatMs * 10),
      "--logger", "zap", "--log-level", "error",
    ];
    this.#log = "";
    // With setpriv, a member dies with the test process even when that is SIGKILLed (a file's timeout).
    const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
    const child = setpriv
      ? spawn(setpriv, ["--pdeathsig", "SIGKILL", etcdBinary(), ...args], { stdio: ["ignore", "ignore", "pipe"] })
      : spawn(etcdBinary(), args, { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr?.on("data", (d: Buffer) => {
      this.#log = (this.#log + d.toString()).slice(-4000);
    });
    this.#exited = new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", () => resolve());
    });
    this.#child = child;
    running.add(this);
  }

  async status(): Promise<{ member: string; leader: string } | undefined> {
    try {
      const res = await fetch(`http://${HOST}:${this.clientPort}/v3/maintenance/status`, {
        method: "POST", body: "{}", signal: AbortSignal.timeout(1000),
      });
      if (!res.ok) return undefined;
      const body = (await res.json()) as { header?: { member_id?: string }; leader?: string };
      if (!body.header?.member_id || !body.leader || body.leader === "0") return undefined;
      return { member: body.header.member_id, leader: body.leader };
    } catch {
      return undefined;
    }
  }

  async healthy(): Promise<boolean> {
    try {
      const res = await fetch(`http://${HOST}:${this.clientPort}/health`, { signal: AbortSignal.timeout(1000) });
      return res.ok && ((await res.json()) as { health?: string }).health === "true";
    } catch {
      return false;
    }
  }

  async waitHealthy(ms = 20_000): Promise<void> {
    const until = performance.now() + ms;
    while (!(await this.healthy())) {
      if (!this.alive) throw new Error(`etcd member ${this.name} exited: ${this.#log}`);
      if (performance.now() > until) throw new Error(`etcd member ${this.name} not healthy within ${ms} ms: ${this.#log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async isLeader(): Promise<boolean> {
    const s = await this.status();
    return !!s && s.member === s.leader;
  }

  async kill(): Promise<void> {
    if (this.alive) this.#child!.kill("SIGKILL");
    // Bounded: a test must fail with a message, never wait on a process that does not go.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`etcd member ${this.name} (pid ${this.pid}) did not exit within 10 s of SIGKILL`)), 10_000);
    });
    try {
      await Promise.race([this.#exited, stuck]);
    } finally {
      clearTimeout(timer);
    }
    running.delete(this);
  }

  partition(on: boolean): void {
    const line = this.peerProxy;
    if (!line) throw new Error("partition() needs a cluster started with peerLines");
    if (on) {
      line.blackhole();
    } else {
      // A stream that lost bytes in the partition would stay corrupt: reset them, peers redial.
      line.heal("reset");
    }
  }

  killSync(): void {
    if (this.alive) this.#child!.kill("SIGKILL");
  }

  async restart(): Promise<void> {
    await this.kill();
    this.launch();
    await this.waitHealthy();
  }
}

/** Starts an N-member cluster (3 by default) and waits until every member is healthy. */
export async function startEtcdCluster(o: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  assertSlowTier("an etcd cluster");
  const size = o.size ?? 3;
  const heartbeatMs = o.heartbeatMs ?? 50;
  const ports = await freePorts(size * 2);
  const peerProxies = o.peerLines ? await Promise.all(ports.slice(size).map((port) => startFaultProxy({ host: HOST, port }))) : [];
  const shm = existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir();
  const root = mkdtempSync(path.join(shm, "surelock-etcd-"));
  const names = Array.from({ length: size }, (_, i) => `m${i}`);
  const initialCluster = names.map((n, i) => `${n}=http://${HOST}:${peerProxies[i]?.port ?? ports[size + i]}`).join(",");
  const members: Member[] = [];
  for (let i = 0; i < size; i++) {
    const proxy = await startFaultProxy({ host: HOST, port: ports[i]! });
    members.push(new Member(names[i]!, ports[i]!, ports[size + i]!, proxy, peerProxies[i], path.join(root, names[i]!), initialCluster, heartbeatMs));
  }
  const lines: FaultProxy[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(members.map((m) => m.kill()));
    await Promise.all([...members.map((m) => m.proxy.close()), ...peerProxies.map((p) => p.close()), ...lines.map((p) => p.close())]);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    for (const m of members) m.launch();
    await Promise.all(members.map((m) => m.waitHealthy()));
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    members,
    hosts: members.map((m) => m.endpoint),
    async line() {
      const proxies = await Promise.all(members.map((m) => startFaultProxy({ host: HOST, port: m.clientPort })));
      lines.push(...proxies);
      return {
        hosts: proxies.map((p) => `${HOST}:${p.port}`),
        proxies,
        cut(on) {
          for (const p of proxies) if (on) p.blackhole(); else p.heal("drop");
        },
      };
    },
    async leader() {
      const until = performance.now() + 20_000;
      for (;;) {
        for (const m of members) if (m.alive && (await m.isLeader())) return m;
        if (performance.now() > until) throw new Error("no etcd leader within 20 s");
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop,
  };
}
