// Shared set-up for the etcd store's tests: a real 3-member cluster per file, clients that reach it
// through the switchboard, stores with unique names and holds, closed after each file.
import { Etcd3 } from "etcd3";
import { randomBytes } from "node:crypto";
import { EtcdStore, type EtcdStoreOptions } from "../../src/etcd/index.js";
import type { AcquireRequest, LockMode } from "../../src/etcd/types.js";
import { startEtcdCluster, type EtcdCluster } from "../helpers/etcd-cluster.js";

export interface EtcdWorld {
  readonly cluster: EtcdCluster;
  /** A client on the given members' switchboard lines (all by default), closed with the world. */
  client(members?: readonly number[]): Etcd3;
  store(options?: Partial<EtcdStoreOptions> & { members?: readonly number[] }): EtcdStore;
  stop(): Promise<void>;
}

/** Clients that fail over quickly: a call is retried once on another member, never for long. */
export function etcdClient(hosts: readonly string[]): Etcd3 {
  return new Etcd3({ hosts: hosts.map((h) => `http://${h}`), dialTimeout: 1_000 });
}

export async function startWorld(): Promise<EtcdWorld> {
  const cluster = await startEtcdCluster();
  const clients: Etcd3[] = [];
  const stores: EtcdStore[] = [];
  const client = (members?: readonly number[]): Etcd3 => {
    const c = etcdClient((members ?? cluster.members.map((_, i) => i)).map((i) => cluster.hosts[i]!));
    clients.push(c);
    return c;
  };
  return {
    cluster,
    client,
    store(options = {}) {
      const { members, ...rest } = options;
      const s = new EtcdStore({ client: rest.client ?? client(members), sessionTtlMs: 3_000, requestTimeoutMs: 2_000, recheckMs: 1_000, ...rest });
      stores.push(s);
      return s;
    },
    async stop() {
      await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
      for (const c of clients) c.close();
      await cluster.stop();
    },
  };
}

let counter = 0;
/** A fresh id (hold, entry, name suffix). */
export function uid(tag = "h"): string {
  return `${tag}${randomBytes(4).toString("hex")}${(++counter).toString(36)}`;
}

/** A fresh acquisition request of `name`. */
export function fresh(name: string, more: Partial<AcquireRequest> = {}, mode: LockMode = { kind: "mutex" }): AcquireRequest {
  const hold = uid();
  return { name, mode, hold, entry: hold, owner: `owner-${hold}`, reentry: { kind: "fresh" }, timeoutMs: 10_000, ...more };
}
