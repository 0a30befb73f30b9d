// Shared set-up for the etcd store's tests: a real 3-member cluster per file, clients that reach it
// through the switchboard, stores with unique names and holds, closed after each file.
import { Etcd3 } from "etcd3";
import { randomBytes } from "node:crypto";
import { EtcdStore, type EtcdStoreOptions } from "../../src/etcd/index.js";
import type { AcquireRequest, LockMode } from "../../src/etcd/types.js";
import { startEtcdCluster, type EtcdCluster } from "../helpers/etcd-cluster.js";
import { within } from "../helpers/fixtures.js";

export interface EtcdWorld {
  readonly cluster: EtcdCluster;
  /** A client on the given members' switchboard lines (all by default), closed with the world. */
  client(members?: readonly number[]): Etcd3;
  store(options?: Partial<EtcdStoreOptions> & { members?: readonly number[] }): EtcdStore;
  stop(): Promise<void>;
}

/**
 * Clients that fail over quickly, and cannot inherit another test's broken connection.
 *
 * A switchboard line that is cut drops bytes for good (a real network would retransmit them): an
 * HTTP/2 connection that lost frames that way stays silent after the line is restored. grpc-js
 * shares connections between all clients of a process that name the same address (its global
 * subchannel pool), so a later test's new client got that silent connection, and its first call,
 * which had no deadline, waited until the runner's 600 s file timeout (the CI failure of the
 * leader-kill test). Each client here has connections of its own (a broken one goes when etcd3
 * resets the client after a failed call), and every unary call a test makes itself is bounded
 * (5 s unless it gives its own deadline, as the store always does).
 */
export function etcdClient(hosts: readonly string[]): Etcd3 {
  return new Etcd3({
    hosts: hosts.map((h) => `http://${h}`),
    dialTimeout: 1_000,
    grpcOptions: { "grpc.use_local_subchannel_pool": 1 },
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: new Date(Date.now() + 5_000) }),
  });
}

export async function startWorld(): Promise<EtcdWorld> {
  const cluster = await within(60_000, startEtcdCluster(), "the etcd cluster's start");
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
      // Bounded, so that a failed test's leftovers cannot hang the file: close() is bounded by the
      // store's request bound, the cluster's stop by SIGKILL.
      await within(15_000, Promise.all(stores.map((s) => s.close().catch(() => undefined))), "closing the stores").catch(() => undefined);
      for (const c of clients) c.close();
      await within(30_000, cluster.stop(), "the etcd cluster's stop");
    },
  };
}

/** Waits until `name` has `n` waiters (keys queued behind its holders), bounded. */
export async function waitersReach(store: EtcdStore, name: string, n: number, ms = 10_000): Promise<void> {
  const until = performance.now() + ms;
  while ((await within(5_000, store.inspect(name), "an inspect")).waiters.length < n) {
    if (performance.now() > until) throw new Error(`${name} did not reach ${n} waiter(s) within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
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
