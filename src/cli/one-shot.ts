/**
 * The frame of the one-shot commands that read or change a key on every `--redis` node (inspect,
 * list, release): connect to whatever answers, always close again, and end with exit code 69 when
 * any node could not do its part, after saying which.
 */
import { CONNECT_TIMEOUT_MS, connectReachable, disconnectAll, type NodeOutcome, type Reached, type RedisAddress } from "./connection.js";
import { ExitCode } from "./exit-codes.js";
import { note } from "./output.js";

/** Runs `work` with the nodes that answered (none: CliError, exit code 69) and closes every connection after it. */
export async function withReachable<T>(addresses: readonly RedisAddress[], work: (reached: Reached) => Promise<T>): Promise<T> {
  const reached = await connectReachable(addresses, { reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  try {
    return await work(reached);
  } finally {
    await disconnectAll(reached.deployments);
  }
}

/** Notes each node whose part failed (its error, then `consequence`) and returns the exit code: 77 if Redis refused the credentials or ACL on any, else 69 if any failed. */
export function exitCodeOf(outcomes: readonly NodeOutcome<unknown>[], consequence = ""): number {
  const failed = outcomes.filter((n) => n.error !== undefined);
  for (const n of failed) note(`${n.error}${consequence}`);
  if (failed.some((n) => n.refused === true)) return ExitCode.noPermission;
  return failed.length > 0 ? ExitCode.unavailable : ExitCode.ok;
}
