// The etcd store beside the `etcd3` client's own lock(), on a real 3-member cluster (data in
// /dev/shm): per acquire+release cycle, the cluster's CPU (all members, from /proc), the requests
// it received (gRPC messages, from each member's /metrics) and the client's CPU.
//
//   node --import tsx bench/etcd.ts [--seconds 3] [--workers 4]
//
// Uncontended: one loop on its own lock. Contended: `workers` loops in this process on one lock;
// etcd3's lock() is try-only, so a refused attempt is retried after 1 ms (as the bench's floor
// does on Redis). The section is empty; a second holder inside it is counted as an overlap.
import { Etcd3 } from "etcd3";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { EtcdStore } from "../src/etcd/index.js";
import { startEtcdCluster, type EtcdCluster } from "../test/helpers/etcd-cluster.js";

const { values: flags } = parseArgs({ options: { seconds: { type: "string", default: "3" }, workers: { type: "string", default: "4" } } });
const SECONDS = Number(flags.seconds);
const WORKERS = Number(flags.workers);
const TICK_MS = 1000 / 100; // USER_HZ

interface Lock {
  acquire(): Promise<() => Promise<void>>;
}

interface Probe {
  cpuMs: number;
  messages: number;
}

function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

async function messagesOf(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("grpc_server_msg_received_total{")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

async function probe(cluster: EtcdCluster): Promise<Probe> {
  let cpuMs = 0;
  let messages = 0;
  for (const m of cluster.members) {
    cpuMs += cpuMsOf(m.pid);
    messages += await messagesOf(m.clientPort);
  }
  return { cpuMs, messages };
}

interface Row {
  readonly cycles: number;
  readonly perSecond: number;
  readonly etcdCpuUsPerCycle: number;
  readonly requestsPerCycle: number;
  readonly clientCpuUsPerCycle: number;
  readonly overlaps: number;
}

async function measure(cluster: EtcdCluster, locks: Lock[]): Promise<Row> {
  let inside = 0;
  let overlaps = 0;
  let cycles = 0;
  const loop = async (lock: Lock, until: number, count: boolean): Promise<void> => {
    while (performance.now() < until) {
      const release = await lock.acquire();
      if (++inside > 1) overlaps++;
      inside--;
      await release();
      if (count) cycles++;
    }
  };
  await Promise.all(locks.map((l) => loop(l, performance.now() + 500, false)));
  const before = await probe(cluster);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(locks.map((l) => loop(l, t0 + SECONDS * 1000, true)));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const after = await probe(cluster);
  return {
    cycles,
    perSecond: (cycles * 1000) / elapsed,
    etcdCpuUsPerCycle: ((after.cpuMs - before.cpuMs) * 1000) / cycles,
    // Minus the probe's own /metrics reads, which are HTTP, not gRPC: nothing to subtract.
    requestsPerCycle: (after.messages - before.messages) / cycles,
    clientCpuUsPerCycle: (cpu.user + cpu.system) / cycles,
    overlaps,
  };
}

function surelockLocks(client: Etcd3, name: string, n: number): { locks: Lock[]; close: () => Promise<void> } {
  const store = new EtcdStore({ client, prefix: "bench/surelock/" });
  let next = 0;
  const lock: Lock = {
    async acquire() {
      const hold = `h${++next}`;
      const held = await store.acquire({ name, mode: { kind: "mutex" }, hold, entry: hold, owner: "bench", reentry: { kind: "fresh" }, timeoutMs: 30_000 });
      return async () => {
        await store.release(held.ref, hold);
      };
    },
  };
  return { locks: Array.from({ length: n }, () => lock), close: () => store.close() };
}

function etcd3Locks(client: Etcd3, name: string, n: number): Lock[] {
  const lock: Lock = {
    async acquire() {
      for (;;) {
        const l = client.lock(`bench/etcd3/${name}`).ttl(10);
        try {
          await l.acquire();
          return async () => {
            await l.release();
          };
        } catch (error) {
          if ((error as Error).constructor.name !== "EtcdLockFailedError") throw error;
          await new Promise((r) => setTimeout(r, 1));
        }
      }
    },
  };
  return Array.from({ length: n }, () => lock);
}

const fmt = (x: number, d = 1): string => x.toFixed(d);

async function main(): Promise<void> {
  const cluster = await startEtcdCluster();
  const client = new Etcd3({ hosts: cluster.hosts.map((h) => `http://${h}`) });
  const rows: [string, string, Row][] = [];
  try {
    for (const [label, workers] of [["uncontended", 1], [`contended x${WORKERS}`, WORKERS]] as const) {
      const s = surelockLocks(client, `${label}-s`, workers);
      rows.push(["surelock etcd store", label, await measure(cluster, s.locks)]);
      await s.close();
      rows.push(["etcd3 lock()", label, await measure(cluster, etcd3Locks(client, `${label}-e`, workers))]);
    }
  } finally {
    client.close();
    await cluster.stop();
  }
  const lines = [
    `load average ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}, ${SECONDS} s windows, 3 members in /dev/shm`,
    "",
    "| library | workload | cycles/s | etcd CPU µs/cycle | requests/cycle | client CPU µs/cycle | overlaps |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(([lib, w, r]) => `| ${lib} | ${w} | ${fmt(r.perSecond, 0)} | ${fmt(r.etcdCpuUsPerCycle, 0)} | ${fmt(r.requestsPerCycle, 2)} | ${fmt(r.clientCpuUsPerCycle, 0)} | ${r.overlaps} |`),
    "",
    "surelock / etcd3 lock():",
    ...["uncontended", `contended x${WORKERS}`].map((w) => {
      const s = rows.find(([l, x]) => l.startsWith("surelock") && x === w)![2];
      const e = rows.find(([l, x]) => l.startsWith("etcd3") && x === w)![2];
      return `- ${w}: etcd CPU per cycle ${fmt(s.etcdCpuUsPerCycle / e.etcdCpuUsPerCycle, 2)}, requests per cycle ${fmt(s.requestsPerCycle / e.requestsPerCycle, 2)}, cycles/s ${fmt(s.perSecond / e.perSecond, 2)}`;
    }),
  ];
  console.log(lines.join("\n"));
}

await main();
