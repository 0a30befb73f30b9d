// The etcd store's torture run: stores (each with its own client and its own line to every member)
// contend for one lock and increment a counter under the fencing guard, while a nemesis kills the
// leader, cuts a member off from every client, and stalls one client's keep-alives past its TTL.
//
//   node --import tsx test/etcd/torture.ts [--seconds 600] [--stores 4] [--workers 3] [--seed 1]
//
// Checks: no section starts while another holder still trusts its hold (its signal not aborted and
// its held-until not passed); the counter equals the fenced writes that landed (each leaves a key
// with its token, so a write whose reply was lost counts too); ordered by the revision each write
// committed at, their fencing tokens strictly rise. Exits 1 on a violation.
import { Etcd3 } from "etcd3";
import { ConnectionError, LockLostError, LockTimeoutError } from "../../src/errors.js";
import { EtcdStore, type Held } from "../../src/etcd/index.js";
import { startEtcdCluster, type EtcdLine } from "../helpers/etcd-cluster.js";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const SECONDS = opt("seconds", 60);
const STORES = opt("stores", 4);
const WORKERS = opt("workers", 3);
let seed = opt("seed", 1);
const random = (): number => {
  // mulberry32: a reproducible nemesis schedule.
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (line: string): void => console.log(`${(performance.now() / 1000).toFixed(1)}s ${line}`);

async function main(): Promise<number> {
  const cluster = await startEtcdCluster();
  const lines: EtcdLine[] = [];
  const clients: Etcd3[] = [];
  const stores: EtcdStore[] = [];
  for (let i = 0; i < STORES; i++) {
    const line = await cluster.line();
    lines.push(line);
    const client = new Etcd3({ hosts: line.hosts.map((h) => `http://${h}`), dialTimeout: 1_000 });
    clients.push(client);
    stores.push(new EtcdStore({ client, sessionTtlMs: 3_000, requestTimeoutMs: 1_500, recheckMs: 1_000 }));
  }
  const admin = new Etcd3({ hosts: cluster.members.map((m) => `http://127.0.0.1:${m.clientPort}`) });
  const name = "torture";
  const counter = "torture-counter";
  await admin.put(counter).value("0");

  let current: Held | undefined;
  let sections = 0;
  const violations: string[] = [];
  const writes: { revision: bigint; token: bigint }[] = [];
  const errors = new Map<string, number>();
  const count = (e: unknown): void => {
    const key = e instanceof LockLostError ? `LockLostError(${e.reason})` : e instanceof Error ? e.name : String(e);
    errors.set(key, (errors.get(key) ?? 0) + 1);
    if (!(e instanceof ConnectionError || e instanceof LockLostError || e instanceof LockTimeoutError)) violations.push(`untyped failure: ${String(e)}`);
  };
  const stopAt = performance.now() + SECONDS * 1000;
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
        const value = Number(await admin.get(counter).string());
        // Each write also leaves a key of its own with its token: a write whose reply was lost is counted too.
        await store.fenced(h.ref, [
          { request_put: { key: Buffer.from(counter), value: Buffer.from(String(value + 1)) } },
          { request_put: { key: Buffer.from(`${counter}/${id}`), value: Buffer.from(h.ref.token.toString()) } },
        ]);
        sections++;
      } catch (e) {
        count(e);
      } finally {
        if (current === h) current = undefined;
      }
      await store.release(h.ref, id).catch(count);
    }
  };

  const nemesis = async (): Promise<void> => {
    while (performance.now() < stopAt - 3_000) {
      await sleep(2_000 + random() * 3_000);
      const pick = random();
      if (pick < 0.34) {
        const leader = await cluster.leader();
        log(`nemesis: kill leader ${leader.name}`);
        await leader.kill();
        await sleep(500 + random() * 2_000);
        await leader.restart();
        log(`nemesis: ${leader.name} back`);
      } else if (pick < 0.67) {
        const m = Math.floor(random() * cluster.members.length);
        log(`nemesis: cut member m${m} off from every client`);
        cluster.members[m]!.proxy.blackhole();
        for (const line of lines) line.proxies[m]!.blackhole();
        await sleep(1_000 + random() * 4_000);
        cluster.members[m]!.proxy.pass();
        for (const line of lines) line.proxies[m]!.pass();
        log(`nemesis: m${m} reconnected`);
      } else {
        const s = Math.floor(random() * lines.length);
        log(`nemesis: stall store ${s}'s keep-alives past its TTL`);
        lines[s]!.cut(true);
        await sleep(4_000 + random() * 2_000);
        lines[s]!.cut(false);
        log(`nemesis: store ${s} reconnected`);
      }
    }
  };

  try {
    await Promise.all([nemesis(), ...stores.flatMap((s) => Array.from({ length: WORKERS }, () => worker(s)))]);
    const final = Number(await admin.get(counter).string());
    const landed = await admin.kv.range({ key: Buffer.from(`${counter}/`), range_end: Buffer.from(`${counter}0`) });
    for (const kv of landed.kvs) writes.push({ revision: BigInt(kv.create_revision), token: BigInt(kv.value.toString()) });
    if (final !== writes.length) violations.push(`counter ${final}, fenced writes ${writes.length}`);
    writes.sort((a, b) => (a.revision < b.revision ? -1 : 1));
    for (let i = 1; i < writes.length; i++) {
      if (writes[i]!.token <= writes[i - 1]!.token) violations.push(`fenced write at revision ${writes[i]!.revision} has token ${writes[i]!.token} after ${writes[i - 1]!.token}`);
    }
    log(`${sections} sections, ${writes.length} fenced writes landed, counter ${final}; failures: ${JSON.stringify(Object.fromEntries(errors))}`);
  } finally {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    for (const c of clients) c.close();
    admin.close();
    await cluster.stop();
  }
  for (const v of violations.slice(0, 20)) console.error(`VIOLATION ${v}`);
  console.log(violations.length === 0 ? "OK: no overlap, no fenced write out of order" : `${violations.length} violations`);
  return violations.length === 0 ? 0 : 1;
}

process.exitCode = await main();
