// Types of run.mjs, for TypeScript callers such as test/examples/demo.test.ts.

export type StrategyName =
  | "none" | "setnx-then-expire" | "del-without-check" | "get-then-del" | "surelock" | "surelock+fencing";

export declare const STRATEGY_NAMES: readonly StrategyName[];

export interface FlashSaleOptions {
  /** Strategies to run, in order (default: all six). */
  strategies?: readonly StrategyName[];
  /** Shop instances behind the balancer (default 2; at least 2 with faults). */
  instances?: number;
  /** Units on sale (default 40). */
  stock?: number;
  /** Purchases in the burst (default 160). */
  buyers?: number;
  /** Concurrent buyers (default 32). */
  connections?: number;
  /** Lock TTL in ms (default 400). */
  ttlMs?: number;
  /** How long an instance waits for the lock before answering 503 (default 1200). */
  acquireTimeoutMs?: number;
  /** Think time between read and write, [min, max] ms (default [6, 16]). */
  thinkMs?: readonly [number, number];
  /** Naive locks' retry pause, [min, max] ms (default [2, 6]). */
  spinMs?: readonly [number, number];
  /** Inject each strategy's fault (default true). */
  faults?: boolean;
  /** Picks think times and the moment of the fault (default 1). */
  seed?: number;
  /** Use this Redis instead of a throwaway redis-server (default: REDIS_URL if set). */
  redisUrl?: string;
  /** Stops the run; every process it started is stopped before the promise rejects. */
  signal?: AbortSignal;
  onProgress?: (progress: {
    strategy: StrategyName; index: number; total: number; phase: "starting" | "burst" | "stopping";
    sold?: number; answered?: number; buyers?: number; note?: string;
  }) => void;
  /** Called with the pid of every process the run starts. */
  onChild?: (pid: number, name: string) => void;
}

export declare const DEFAULTS: Readonly<Required<Omit<FlashSaleOptions, "redisUrl" | "signal" | "onProgress" | "onChild">>>;

export interface Hold {
  instance: number;
  id: string;
  /** ms on the run's monotonic clock */
  start: number;
  end: number;
  outcome?: "sold" | "sold-out" | "stale-refused" | "killed" | "unfinished" | "error";
  writeAt?: number;
  lostAt?: number;
  releaseError?: string;
}

export interface RunEvent {
  kind: "armed" | "pause" | "resume" | "kill" | "refused" | "lost" | "release-refused";
  instance: number;
  at: number;
  point?: string;
  why?: string;
  detail?: string;
}

export interface StrategyResult {
  strategy: StrategyName;
  summary: string;
  instances: number;
  stock: number;
  buyers: number;
  /** Orders in the order log. */
  accepted: number;
  /** Orders beyond the stock. */
  oversold: number;
  /** The stock counter at the end. */
  unitsLeft: number;
  /** Orders the stock counter does not account for. */
  lostUpdates: number;
  locksWithoutTtl: number;
  keysWithoutTtl: string[];
  /** Holders that went on believing they held the lock while another one held it. */
  doubleHolders: number;
  overlaps: { start: number; end: number; holders: number }[];
  staleWritesRefused: number;
  releasesRefused: number;
  latencyMs: { p50: number | null; p99: number | null };
  /** HTTP status → count, as the buyers saw them. */
  statuses: Record<string, number>;
  /** instance: the one that reached the fault point first once it was armed (null if none did). */
  fault: { kind: "pause" | "kill"; at: string; instance: number | null; injected: boolean; armAfterSales: number } | null;
  holds: Hold[];
  events: RunEvent[];
  window: { start: number; end: number };
  /** The shop instances' pids. */
  pids: number[];
}

export interface FlashSaleResult {
  redis: { url: string; version?: string; throwaway: boolean };
  options: Required<Omit<FlashSaleOptions, "redisUrl" | "signal" | "onProgress" | "onChild">> & { redisUrl?: string };
  strategies: StrategyResult[];
  /** Every process the run started (redis-server and shop instances); all have exited. */
  pids: number[];
  durationMs: number;
}

export declare function runFlashSale(options?: FlashSaleOptions): Promise<FlashSaleResult>;
