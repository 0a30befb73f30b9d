/** Messages between the orchestrator and its worker processes (over the fork IPC channel). */
import type { HistoryEvent } from "./history.js";
import type { DeploymentKind } from "./plan.js";

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** How a worker reaches the deployment: always through the proxies. */
export type ClientSpec =
  | { readonly kind: "single"; readonly node: HostPort }
  /** natMap: real `host:port` (what Sentinel and Cluster announce) to the proxy in front of it. */
  | { readonly kind: "sentinel"; readonly sentinels: readonly HostPort[]; readonly name: string; readonly natMap: Readonly<Record<string, HostPort>> }
  | { readonly kind: "cluster"; readonly startup: readonly HostPort[]; readonly natMap: Readonly<Record<string, HostPort>> }
  /** Quorum nodes, and a separate server for the counters the sections update. */
  | { readonly kind: "quorum"; readonly nodes: readonly HostPort[]; readonly data: HostPort };

export interface WorkerConfig {
  readonly index: number;
  readonly seed: number;
  readonly deployment: DeploymentKind;
  readonly spec: ClientSpec;
  readonly keys: number;
  /** Concurrent flows of operations in the worker. */
  readonly flows: number;
  /** ioredis `autoResendUnfulfilledCommands` of this worker's clients. */
  readonly autoResend: boolean;
  /** surelock `commandTimeout` (per node in quorum mode). */
  readonly commandTimeoutMs: number;
  /** Slack added to every call's bound (stated in the report). */
  readonly slackMs: number;
}

export type ToWorker =
  | { readonly type: "config"; readonly config: WorkerConfig }
  | { readonly type: "ping"; readonly id: number }
  | { readonly type: "go"; readonly origin: number; readonly stopAt: number }
  | { readonly type: "stop" };

export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "pong"; readonly id: number; readonly at: number }
  | { readonly type: "events"; readonly events: readonly HistoryEvent[] }
  | { readonly type: "done" }
  | { readonly type: "error"; readonly message: string };
