/**
 * `surelock exec --key K -- cmd args...`: runs a command while holding a lock, like `etcdctl
 * lock` or `flock`: the mutex K, or with `--shared` / `--exclusive` a side of the read-write lock
 * K, or with `--semaphore --permits N` one of N permits. The command runs only after the lock is
 * ours, in its own process group (unless --foreground), and is stopped (SIGTERM, then SIGKILL)
 * the moment the lease can no longer be trusted. The lock is released once the command has exited.
 *
 * The flow only; each step has a module: connect, acquire, child (with stop), signals, log.
 */
import { Surelock } from "../../surelock.js";
import { disconnectAll, type Deployment } from "../connection.js";
import { acquire } from "./acquire.js";
import { runHolding } from "./child.js";
import { connectNodes } from "../majority.js";
import { logLockEvents } from "./log.js";
import { subject, type ExecOptions } from "./options.js";
import { SignalRelay } from "./signals.js";

/** Runs `surelock exec` and returns its exit code; throws a CliError for a failure before the command ran. */
export async function exec(o: ExecOptions): Promise<number> {
  const deployments = await connectNodes(o.addresses, true);
  const first = deployments[0] as Deployment;
  const locks = new Surelock({
    redis: deployments.length === 1 ? first.client : deployments.map((d) => d.client),
    prefix: o.prefix,
    ttl: o.ttlMs,
  });
  const signals = new SignalRelay();
  const stopLogging = o.verbose ? logLockEvents(o.key, subject(o)) : () => {};
  try {
    const lease = await acquire(locks, deployments, o, signals);
    return await runHolding(lease, o, signals);
  } finally {
    signals.dispose();
    await locks.close();
    stopLogging();
    await disconnectAll(deployments);
  }
}
