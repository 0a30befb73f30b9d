/** Connections for the commands that hold or follow a lock: in quorum mode a majority must answer. */
import { CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, unreachable, type Deployment, type RedisAddress } from "./connection.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { note } from "./output.js";

/**
 * One client per address. `reconnect`: clients that keep trying, for a command that must ride out
 * a short network blip (exec holding a lock, leader waiting or following). In quorum mode a
 * majority must answer now; a node that does not still counts, with a client that keeps trying,
 * because leaving it out would let a smaller majority decide.
 */
export async function connectNodes(addresses: readonly RedisAddress[], reconnect: boolean): Promise<Deployment[]> {
  const { deployments, failures } = await connectReachable(addresses, { reconnect, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  if (failures.length === 0) return deployments;
  const majority = Math.floor(addresses.length / 2) + 1;
  const reasons = failures.map((f) => f.error.message).join("; ");
  if (deployments.length < majority) {
    await disconnectAll(deployments);
    throw new CliError(`only ${deployments.length} of ${addresses.length} nodes answered, ${majority} needed: ${reasons}`, ExitCode.unavailable);
  }
  const later = reconnect ? " and trying it again in the background" : "";
  for (const f of failures) note(`${f.error.message}; going on with the other nodes${later}`);
  return addresses.map((a) => deployments.find((d) => d.address === a) ?? unreachable(a, CONNECT_TIMEOUT_MS));
}
