/**
 * `surelock leader K`: who leads the election K (`locks.election(K)`), read from Redis; with
 * `--wait`, waits until someone does; with `--follow`, prints the leader and every change until
 * interrupted. Built on the library's own Election (leader() and observe()), so it reads and
 * watches exactly as a program would, in quorum mode too.
 */
import { constants } from "node:os";
import type { Leader } from "../index.js";
import { Surelock } from "../surelock.js";
import { disconnectAll, type Deployment, type RedisAddress } from "./connection.js";
import { formatDuration } from "./duration.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { leader as describeLeader } from "./inspect.js";
import { note, print, quote } from "./output.js";
import { connectNodes } from "./majority.js";

export interface LeaderOptions {
  readonly addresses: readonly RedisAddress[];
  readonly prefix: string;
  readonly key: string;
  readonly json: boolean;
  /** Wait until there is a leader (at most `timeoutMs`), then print it. */
  readonly wait: boolean;
  /** Print the leader and every change until interrupted. */
  readonly follow: boolean;
  /** `--wait`'s longest wait; Infinity: until interrupted. */
  readonly timeoutMs: number;
}

/** The `--json` shape (one line per change with `--follow`). */
export interface LeaderReport {
  readonly key: string;
  readonly prefix: string;
  readonly leader: { readonly owner: string; readonly value: string | null; readonly fencingToken: string; readonly expiresInMs: number } | null;
  /** With --follow: when it was read (ISO 8601). */
  readonly at?: string;
}

const INTERRUPTS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export async function leader(o: LeaderOptions): Promise<number> {
  const deployments = await connectNodes(o.addresses, o.wait || o.follow);
  const locks = new Surelock({ redis: deployments.length === 1 ? (deployments[0] as Deployment).client : deployments.map((d) => d.client), prefix: o.prefix });
  const stop = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    interruptedBy = signal;
    stop.abort();
  };
  for (const s of INTERRUPTS) process.on(s, onSignal);
  let timedOut = false;
  const timer = o.wait && o.timeoutMs < Infinity ? setTimeout(() => { timedOut = true; stop.abort(); }, o.timeoutMs) : undefined;
  try {
    const election = locks.election(o.key);
    if (!o.wait && !o.follow) {
      show(o, await election.leader());
      return ExitCode.ok;
    }
    let first = true;
    for await (const now of election.observe({ signal: stop.signal })) {
      if (o.follow) show(o, now, new Date().toISOString());
      else if (now) {
        show(o, now);
        return ExitCode.ok;
      } else if (first) note(`no leader of ${quote(o.key)} yet: waiting for one`);
      first = false;
    }
    if (timedOut) throw new CliError(`no leader of ${quote(o.key)} within ${formatDuration(o.timeoutMs)}`, ExitCode.timeout);
    // Interrupted: the normal end of --follow; a --wait that never saw a leader says so.
    if (o.follow) return ExitCode.ok;
    note(`interrupted by ${interruptedBy ?? "a signal"} while waiting for a leader of ${quote(o.key)}`);
    return ExitCode.signalBase + signalNumber(interruptedBy);
  } finally {
    clearTimeout(timer);
    for (const s of INTERRUPTS) process.off(s, onSignal);
    await locks.close();
    await disconnectAll(deployments);
  }
}

function show(o: LeaderOptions, l: Leader | null, at?: string): void {
  if (o.json) {
    const report: LeaderReport = {
      key: o.key,
      prefix: o.prefix,
      leader: l && { owner: l.owner, value: l.value, fencingToken: l.fencingToken.toString(), expiresInMs: l.expiresInMs },
      ...(at !== undefined && { at }),
    };
    // One object per line when following, so each change can be read as it comes.
    print(at === undefined ? JSON.stringify(report, null, 2) : JSON.stringify(report));
    return;
  }
  const line = l
    ? `${quote(o.key)}: ${describeLeader({ owner: l.owner, hold: "", proclaimed: true, fencingToken: l.fencingToken.toString(), value: l.value, pttlMs: l.expiresInMs })}`
    : `${quote(o.key)}: no leader`;
  print(at === undefined ? line : `${at}  ${line}`);
}


function signalNumber(signal: NodeJS.Signals | undefined): number {
  return constants.signals[signal ?? "SIGINT"];
}
