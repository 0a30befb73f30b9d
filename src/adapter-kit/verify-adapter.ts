/**
 * verifyAdapter: the adapter test kit. Runs the RedisAdapter contract (docs/adapters.md) as a
 * checklist against a live adapter, for people who write an adapter for a client surelock does
 * not ship one for, and resolves with a report, or rejects with AdapterVerificationError naming
 * every check that failed.
 */
import { randomBytes } from "node:crypto";
import type { RedisAdapter } from "../adapters/types.js";
import { InvalidArgumentError, SurelockError } from "../index.js";
import { CheckFailed, Skipped, type Check, type CheckContext } from "./checks/check-steps.js";
import {
  argumentsCheck, clusterFlag, command, concurrency, errorReplies, evalsha, noscript, replyTypes, shape,
} from "./checks/calls-and-replies.js";
import { endToEnd, replicaWait } from "./checks/end-to-end.js";
import { clusterRouting, keyPrefix } from "./checks/keys-and-slots.js";
import { cleanUp } from "./checks/kit-scripts.js";
import { close, reconnect, subscribe, unsubscribe } from "./checks/subscriptions.js";
import { messageOf } from "./error-replies.js";

/** The checks of verifyAdapter, in the order they run (docs/adapters.md says what each one holds the adapter to). */
export type AdapterCheckName =
  | "shape" | "command" | "cluster-flag" | "arguments" | "reply-types" | "error-replies" | "noscript" | "evalsha" | "concurrency"
  | "key-prefix" | "cluster-routing" | "subscribe" | "unsubscribe" | "reconnect" | "close" | "replica-wait" | "surelock";

const CHECKS: readonly (readonly [AdapterCheckName, Check])[] = [
  ["shape", shape],
  ["command", command],
  ["cluster-flag", clusterFlag],
  ["arguments", argumentsCheck],
  ["reply-types", replyTypes],
  ["error-replies", errorReplies],
  ["noscript", noscript],
  ["evalsha", evalsha],
  ["concurrency", concurrency],
  ["key-prefix", keyPrefix],
  ["cluster-routing", clusterRouting],
  ["subscribe", subscribe],
  ["unsubscribe", unsubscribe],
  ["reconnect", reconnect],
  ["close", close],
  ["replica-wait", replicaWait],
  ["surelock", endToEnd],
];

/** Every check name, in the order they run. */
const CHECK_NAMES: readonly AdapterCheckName[] = CHECKS.map(([name]) => name);

/** Options of {@link verifyAdapter}. */
export interface VerifyAdapterOptions {
  /**
   * Namespace of the keys and channels the checks use (`<namespace>:{<random>}:…`, and the
   * surelock prefix `<namespace>-<random>`); every key gets a PTTL and is deleted at the end.
   * No `{` or `}`, at most 64 bytes of UTF-8. Default `"surelock-verify"`.
   */
  readonly namespace?: string;
  /** Longest wait for any one step, in ms (a call that never settles fails its check). Default 5000. */
  readonly timeoutMs?: number;
  /**
   * Cuts the adapter's subscriber connections, for the `reconnect` check (for `MemoryRedis`:
   * `() => redis.dropSubscribers()`). By default the check finds the subscriber's connection
   * with `CLIENT LIST` and cuts it with `CLIENT KILL`, and is skipped when the server refuses
   * those. `false` skips the check.
   */
  readonly dropSubscribers?: (() => void | Promise<void>) | false;
  /**
   * Replicas the deployment has: `commandThenWait`'s WAIT must count at least this many. Default
   * 0 (only the shape of its answer is checked).
   */
  readonly replicas?: number;
  /** Checks not to run (reported as skipped). */
  readonly skip?: readonly AdapterCheckName[];
}

/** The outcome of one check. */
export interface AdapterCheckResult {
  /** Which check. */
  readonly check: AdapterCheckName;
  /** `failed` names a broken promise of the contract; `skipped` a check that does not apply (or could not be arranged). */
  readonly status: "passed" | "failed" | "skipped";
  /** What was seen: every problem when failed, why when skipped. */
  readonly detail: string;
  /** How long it ran, in ms. */
  readonly durationMs: number;
}

/** What {@link verifyAdapter} found. */
export interface AdapterReport {
  /** The adapter's `name`. */
  readonly adapter: string;
  /** True when no check failed. */
  readonly ok: boolean;
  /** The prefix the adapter puts on keys, as the `key-prefix` check saw it (`""`: none); undefined if unseen. */
  readonly keyPrefix: string | undefined;
  /** Every check, in the order they ran. */
  readonly checks: readonly AdapterCheckResult[];
}

/** {@link verifyAdapter} found checks that failed; `failures` lists them, `report` has every check. */
export class AdapterVerificationError extends SurelockError {
  /** The stable code of this class: `ERR_SURELOCK_ADAPTER_VERIFICATION`. */
  static override readonly CODE = "ERR_SURELOCK_ADAPTER_VERIFICATION";
  /** The whole report. */
  readonly report: AdapterReport;
  /** The checks that failed. */
  readonly failures: readonly AdapterCheckResult[];

  constructor(report: AdapterReport) {
    const failures = report.checks.filter((c) => c.status === "failed");
    super(AdapterVerificationError.CODE, `adapter ${JSON.stringify(report.adapter)} failed ${failures.length} of ${report.checks.length} checks: ` +
      failures.map((f) => `${f.check}: ${f.detail}`).join(" | "));
    this.name = "AdapterVerificationError";
    this.report = report;
    this.failures = failures;
  }
}

const OPTIONS = ["namespace", "timeoutMs", "dropSubscribers", "replicas", "skip"] as const;

function checkOptions(value: unknown): Required<Omit<VerifyAdapterOptions, "dropSubscribers">> & Pick<VerifyAdapterOptions, "dropSubscribers"> {
  if (value === undefined) return { namespace: "surelock-verify", timeoutMs: 5_000, replicas: 0, skip: [] };
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InvalidArgumentError("options", value, "an object");
  const o = value as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    if (!(OPTIONS as readonly string[]).includes(name)) throw new InvalidArgumentError(`options.${name}`, o[name], `no such option (options are ${OPTIONS.join(", ")})`);
  }
  const namespace = o.namespace ?? "surelock-verify";
  if (typeof namespace !== "string" || namespace === "" || /[{}]/.test(namespace) || !namespace.isWellFormed() || Buffer.byteLength(namespace) > 64) {
    throw new InvalidArgumentError("options.namespace", namespace, "a non-empty well-formed string without { or }, at most 64 bytes of UTF-8");
  }
  const timeoutMs = o.timeoutMs ?? 5_000;
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) {
    throw new InvalidArgumentError("options.timeoutMs", timeoutMs, "an integer number of ms, 1 … 2^31−1");
  }
  const drop = o.dropSubscribers;
  if (drop !== undefined && drop !== false && typeof drop !== "function") {
    throw new InvalidArgumentError("options.dropSubscribers", drop, "a function, false, or undefined");
  }
  const replicas = o.replicas ?? 0;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0 || replicas > 1_000) {
    throw new InvalidArgumentError("options.replicas", replicas, "an integer, 0 … 1000");
  }
  const skip = o.skip ?? [];
  if (!Array.isArray(skip) || !skip.every((s) => (CHECK_NAMES as readonly unknown[]).includes(s))) {
    throw new InvalidArgumentError("options.skip", skip, `an array of check names (${CHECK_NAMES.join(", ")})`);
  }
  return { namespace, timeoutMs, replicas, skip: skip as AdapterCheckName[], dropSubscribers: drop as VerifyAdapterOptions["dropSubscribers"] };
}

/**
 * Runs the RedisAdapter contract against a live adapter: replies in the shapes surelock parses,
 * error replies and NOSCRIPT as rejections it recognises, key prefixes applied consistently,
 * subscriptions that deliver, stop, come back after a reconnect and close, `commandThenWait` when
 * present, the `cluster` flag, and surelock itself end to end. Every check runs (a failure does
 * not stop the others); keys and channels live under `options.namespace` and are removed after.
 *
 * @param adapter - the adapter under test, connected to a server that may be written to.
 * @param options - see {@link VerifyAdapterOptions}.
 * @returns the report, when no check failed.
 * @throws {@link AdapterVerificationError} (as a rejection) when a check failed, with the report;
 *   `InvalidArgumentError` before any I/O for an adapter that is not an object, or a bad option.
 *
 * @example
 * ```ts
 * const report = await verifyAdapter(myAdapter);
 * for (const c of report.checks) console.log(c.status, c.check, c.detail);
 * ```
 */
export async function verifyAdapter(adapter: RedisAdapter, options?: VerifyAdapterOptions): Promise<AdapterReport> {
  if (typeof adapter !== "object" || adapter === null) throw new InvalidArgumentError("adapter", adapter, "a RedisAdapter (an object)");
  const o = checkOptions(options);
  const ctx: CheckContext = {
    adapter,
    timeoutMs: o.timeoutMs,
    namespace: o.namespace,
    run: randomBytes(6).toString("hex"),
    dropSubscribers: o.dropSubscribers,
    replicas: o.replicas,
    written: new Set(),
    keyPrefix: undefined,
  };
  const results: AdapterCheckResult[] = [];
  let blocked: string | undefined;
  try {
    for (const [name, check] of CHECKS) {
      const startedAt = performance.now();
      const result = (status: AdapterCheckResult["status"], detail: string): AdapterCheckResult =>
        ({ check: name, status, detail, durationMs: Math.round(performance.now() - startedAt) });
      if (o.skip.includes(name)) {
        results.push(result("skipped", "options.skip"));
        continue;
      }
      if (blocked !== undefined) {
        results.push(result("skipped", blocked));
        continue;
      }
      try {
        results.push(result("passed", await check(ctx)));
      } catch (error) {
        if (error instanceof Skipped) results.push(result("skipped", error.message));
        else if (error instanceof CheckFailed) results.push(result("failed", error.message));
        else results.push(result("failed", `${error instanceof Error ? error.name : "error"}: ${messageOf(error)}`));
      }
      if (name === "shape" && results.at(-1)?.status === "failed") blocked = "the adapter does not have the contract's members (see shape)";
    }
  } finally {
    if (blocked === undefined) await cleanUp(ctx);
  }
  const ok = results.every((r) => r.status !== "failed");
  const report: AdapterReport = { adapter: typeof adapter.name === "string" ? adapter.name : String(adapter.name), ok, keyPrefix: ctx.keyPrefix, checks: results };
  if (!ok) throw new AdapterVerificationError(report);
  return report;
}
