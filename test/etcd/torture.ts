// The etcd store's torture run: stores (each with its own client and its own line to every member)
// contend for one lock and increment a counter under the fencing guard, while a nemesis kills the
// leader, partitions a member (from its peers and from every client), and stalls one client's
// keep-alives past its TTL.
//
//   node --import tsx test/etcd/torture.ts [--seconds 600] [--stores 4] [--workers 3] [--seed 1]
//
// Checks: no section starts while another holder still trusts its hold (its signal not aborted and
// its held-until not passed); the counter equals the fenced writes that landed (each leaves a key
// with its token, so a write whose reply was lost counts too); ordered by the revision each write
// committed at, their fencing tokens strictly rise; every failure a store call gives is typed.
// Exits 1 on a violation. test/etcd/torture.test.ts runs a short one with every fault in turn.
import { Etcd3 } from "etcd3";
import { pathToFileURL } from "node:url";
import { ConnectionError, LockLostError, LockTimeoutError } from "../../src/errors.js";
import { EtcdStore, type Held } from "../../src/etcd/index.js";
import { startEtcdCluster, type EtcdCluster, type EtcdLine } from "../helpers/etcd-cluster.js";
import { within } from "../helpers/fixtures.js";

export type Fault = "kill" | "partition" | "stall";

export interface TortureOptions {
  readonly seconds: number;
  readonly stores?: number;
  readonly workers?: number;
  readonly seed?: number;
  /** Faults in this order, round and round (default: a seeded random pick each time). */
  readonly cycle?: readonly Fault[];
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface TortureResult {
  /** Sections whose fenced write was acknowledged. */
  readonly sections: number;
  /** Fenced writes the guard refused (the hold was gone by then): nothing written. */
  readonly refused: number;
  /** Fenced writes found in etcd afterwards (a write whose reply was lost counts here too). */
  readonly landed: number;
  readonly counter: number;
  readonly faults: Record<Fault, number>;
  /** Store calls that failed, by error (typed: a ConnectionError, a LockLostError by reason, a LockTimeoutError). */
  readonly failures: Record<string, number>;
  /** Reads of the counter that failed (the checker's own client, not the store's). */
  readonly readFailures: number;
  readonly violations: readonly string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A client with connections of its own (grpc-js shares them across clients by address otherwise,
 * see etcdClient in support.ts) whose own unary calls are bounded (the stores give every request
 * their own deadline).
 */
function client(hosts: readonly string[]): Etcd3 {
  return new Etcd3({
    hosts: hosts.map((h) => `http://${h}`),
    dialTimeout: 1_000,
    grpcOptions: { "grpc.use_local_subchannel_pool": 1 },
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: new Date(Date.now() + 5_000) }),
  });
}

export async function runTorture(o: TortureOptions): Promise<TortureResult> {
  const log = o.log ?? (() => undefined);
  let seed = o.seed ?? 1;
  const random = (): number => {
    // mulberry32: a reproducible nemesis schedule.
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const cluster: EtcdCluster = await within(60_000, startEtcdCluster({ peerLines: true }), "the etcd cluster's start");
  const lines: EtcdLine[] = [];
  const clients: Etcd3[] = [];
  const stores: EtcdStore[] = [];
  const admin = client(cluster.members.map((m) => `127.0.0.1:${m.clientPort}`));
  const faults: Record<Fault, number> = { kill: 0, partition: 0, stall: 0 };
  const failures = new Map<string, number>();
  const violations: string[] = [];
  let readFailures = 0;
  let sections = 0;
  let refused = 0;
  try {
    for (let i = 0; i < (o.stores ?? 4); i++) {
      const line = await cluster.line();
      lines.push(line);
      const c = client(line.hosts);
      clients.push(c);
      stores.push(new EtcdStore({ client: c, sessionTtlMs: 3_000, requestTimeoutMs: 1_500, recheckMs: 1_000 }));
    }
    const name = "torture";
    const counter = "torture-counter";
    await admin.put(counter).value("0").exec();

    let current: Held | undefined;
    const count = (e: unknown): void => {
      const key = e instanceof LockLostError ? `LockLostError(${e.reason})` : e instanceof Error ? e.name : String(e);
      failures.set(key, (failures.get(key) ?? 0) + 1);
      if (!(e instanceof ConnectionError || e instanceof LockLostError || e instanceof LockTimeoutError)) violations.push(`untyped failure: ${String(e)}`);
    };
    const stopAt = performance.now() + o.seconds * 1000;
    let hold = 0;

    const worker = async (store: EtcdStore): Promise<void> => {
      while (performance.now() < stopAt) {
        const id = `w${++hold}`;
        let h: Held;
        try {
          h = await store.acquire({ name, mode: { kind: "mutex" }, hold: id, entry: id, owner: id, reentry: { kind: "fresh" }, timeoutMs: 10_000 });
        } catch (e) {
          count(e);
          await sleep(20);
          continue;
        }
        const now = performance.now();
        if (current && !current.signal.aborted && current.heldUntil() > now) {
          violations.push(`overlap: ${h.ref.hold} (token ${h.ref.token}) entered while ${current.ref.hold} (token ${current.ref.token}) still trusted its hold for ${(current.heldUntil() - now).toFixed(0)} ms`);
        }
        current = h;
        try {
          let value: number | undefined;
          try {
            value = Number(await admin.get(counter).string());
          } catch {
            readFailures++;
          }
          if (value !== undefined) {
            // Each write also leaves a key of its own with its token: a write whose reply was lost is counted too.
            const { ok } = await store.fenced(h.ref, [
              { request_put: { key: Buffer.from(counter), value: Buffer.from(String(value + 1)) } },
              { request_put: { key: Buffer.from(`${counter}/${id}`), value: Buffer.from(h.ref.token.toString()) } },
            ]);
            if (ok) sections++;
            else refused++;
          }
        } catch (e) {
          count(e);
        } finally {
          if (current === h) current = undefined;
        }
        await store.release(h.ref, id).catch(count);
      }
    };

    let turn = 0;
    const nemesis = async (): Promise<void> => {
      while (performance.now() < stopAt - 3_000) {
        // A cycle (the short run) packs its faults closer, so that each comes in its time.
        await sleep(o.cycle ? 1_000 + random() * 1_000 : 2_000 + random() * 3_000);
        if (performance.now() >= stopAt - 3_000) break;
        const pick = random();
        const kind: Fault = o.cycle ? o.cycle[turn++ % o.cycle.length]! : pick < 0.34 ? "kill" : pick < 0.67 ? "partition" : "stall";
        faults[kind]++;
        if (kind === "kill") {
          const leader = await within(25_000, cluster.leader(), "finding the leader");
          log(`nemesis: kill leader ${leader.name}`);
          await within(15_000, leader.kill(), "killing the leader");
          await sleep(500 + random() * 2_000);
          await within(30_000, leader.restart(), "restarting the old leader");
          log(`nemesis: ${leader.name} back`);
        } else if (kind === "partition") {
          // Half the time the leader, half a member picked at random.
          const m = random() < 0.5
            ? cluster.members.indexOf(await within(25_000, cluster.leader(), "finding the leader"))
            : Math.floor(random() * cluster.members.length);
          const member = cluster.members[m]!;
          log(`nemesis: partition m${m} from its peers and every client`);
          member.partition(true);
          member.proxy.blackhole();
          for (const line of lines) line.proxies[m]!.blackhole();
          try {
            await sleep(1_000 + random() * 4_000);
          } finally {
            member.partition(false);
            member.proxy.heal("drop");
            for (const line of lines) line.proxies[m]!.heal("drop");
          }
          log(`nemesis: m${m} healed`);
        } else {
          const s = Math.floor(random() * lines.length);
          log(`nemesis: stall store ${s}'s keep-alives past its TTL`);
          lines[s]!.cut(true);
          try {
            await sleep(4_000 + random() * 2_000);
          } finally {
            lines[s]!.cut(false);
          }
          log(`nemesis: store ${s} reconnected`);
        }
      }
    };

    const workers = stores.flatMap((s) => Array.from({ length: o.workers ?? 3 }, () => worker(s)));
    await within(o.seconds * 1000 + 90_000, Promise.all([nemesis(), ...workers]), "the workers and the nemesis");
    const final = Number(await within(10_000, admin.get(counter).string(), "reading the counter"));
    const landed = await within(10_000, admin.kv.range({ key: Buffer.from(`${counter}/`), range_end: Buffer.from(`${counter}0`) }), "reading the fenced writes");
    const writes = landed.kvs.map((kv) => ({ revision: BigInt(kv.create_revision), token: BigInt(kv.value.toString()) }));
    if (final !== writes.length) violations.push(`counter ${final}, fenced writes ${writes.length}`);
    writes.sort((a, b) => (a.revision < b.revision ? -1 : 1));
    for (let i = 1; i < writes.length; i++) {
      if (writes[i]!.token <= writes[i - 1]!.token) violations.push(`fenced write at revision ${writes[i]!.revision} has token ${writes[i]!.token} after ${writes[i - 1]!.token}`);
    }
    return { sections, refused, landed: writes.length, counter: final, faults, failures: Object.fromEntries(failures), readFailures, violations };
  } finally {
    await within(15_000, Promise.all(stores.map((s) => s.close().catch(() => undefined))), "closing the stores").catch(() => undefined);
    for (const c of clients) c.close();
    admin.close();
    await within(30_000, cluster.stop(), "the etcd cluster's stop");
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const opt = (name: string, fallback: number): number => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : fallback;
  };
  const started = performance.now();
  const log = (line: string): void => console.log(`${((performance.now() - started) / 1000).toFixed(1)}s ${line}`);
  const r = await runTorture({ seconds: opt("seconds", 60), stores: opt("stores", 4), workers: opt("workers", 3), seed: opt("seed", 1), log });
  log(`${r.sections} sections, ${r.refused} fenced writes refused, ${r.landed} landed, counter ${r.counter}; faults ${JSON.stringify(r.faults)}; failures ${JSON.stringify(r.failures)}; counter reads failed ${r.readFailures}`);
  for (const v of r.violations.slice(0, 20)) console.error(`VIOLATION ${v}`);
  console.log(r.violations.length === 0 ? "OK: no overlap, no fenced write out of order" : `${r.violations.length} violations`);
  process.exitCode = r.violations.length === 0 ? 0 : 1;
}
