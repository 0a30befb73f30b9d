/**
 * A write followed by WAIT on one Cluster node. WAIT counts only the writes of its own
 * connection, so both go back to back to the connection of the primary that owns the key's slot,
 * and we follow MOVED / ASK ourselves (a client library would resend the write alone, to a
 * node the WAIT never reaches). While a slot migrates, ASK sends the pair to the importing node
 * with ASKING first; TRYAGAIN (some keys moved, some not) waits until MIGRATE is done.
 */
import type { AcknowledgedReply, RedisArg, ReplicaWait } from "./types.js";

/** Where to send: the owner of a key's slot (per the client's map), or a node's `host:port`. */
export type NodeTarget = { readonly key: string } | { readonly address: string };

/** One client library's way to reach single Cluster nodes. */
export interface NodeSender {
  /**
   * Sends `commands` back to back on the connection to `target`; one entry per command, the
   * reply or the Error the node returned. Undefined while the client knows no such node.
   */
  send(target: NodeTarget, commands: readonly (readonly RedisArg[])[]): Promise<unknown[] | undefined>;
  /** Asks the client to re-read the slot map (after a MOVED). */
  refresh(): void;
}

/** Redirections followed before giving up (as ioredis' maxRedirections). */
const MAX_REDIRECTS = 16;
const TRY_AGAIN_MS = 50;

export async function commandThenWaitOnNode(
  nodes: NodeSender,
  command: readonly RedisArg[],
  key: string | undefined,
  wait: ReplicaWait,
): Promise<AcknowledgedReply> {
  if (key === undefined) throw new Error(`${String(command[0])} without a key cannot be routed in a Cluster`);
  const waitCommand: RedisArg[] = ["WAIT", wait.replicas, wait.timeoutMs];
  let target: NodeTarget = { key };
  let asking = false;
  for (let redirects = 0; ; redirects++) {
    const commands = asking ? [["ASKING"], command, waitCommand] : [command, waitCommand];
    const replies = await nodes.send(target, commands);
    const reply = replies?.[commands.length - 2];
    if (replies && !(reply instanceof Error)) {
      const waited = replies[commands.length - 1];
      return waited instanceof Error
        ? { reply, acknowledged: 0, waitError: waited }
        : { reply, acknowledged: Number(waited) || 0 };
    }
    if (redirects >= MAX_REDIRECTS) {
      throw reply instanceof Error ? reply : new Error(`no connection to the node that owns ${key}`);
    }
    const [kind, , address] = reply instanceof Error ? reply.message.split(" ") : ["TRYAGAIN"];
    if (kind === "MOVED" && address) {
      nodes.refresh();
      target = { address };
      asking = false;
    } else if (kind === "ASK" && address) {
      target = { address };
      asking = true;
    } else if (kind === "TRYAGAIN" || kind === "CLUSTERDOWN") {
      // Unknown node, a slot mid-migration or a cluster electing a new primary: the write did
      // not run; try the current owner again shortly.
      if (!replies) nodes.refresh();
      await new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_MS * Math.min(redirects + 1, 4)));
      target = { key };
      asking = false;
    } else {
      throw reply;
    }
  }
}
