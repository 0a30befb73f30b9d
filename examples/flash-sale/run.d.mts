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
  /** In front of the instances: "auto" (default) nginx when installed, else "own" (balancer.mjs); or "nginx". */
  balancer?: "auto" | "nginx" | "own";
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
  /** ms on the run's monotonic clock: when its acquire returned */
  start: number;
  /** when it let go of the lock (or died, or the run stopped) */
  end: number;
  /** The last moment it saw itself holding the lock: `end`, or earlier if its lease said "not held". */
  believedUntil: number;
  outcome?: "sold" | "sold-out" | "stale-refused" | "killed" | "unfinished" | "error";
  /** The stock level it read. */
  read?: number;
  /** The stock level its write replaced (undefined: it wrote nothing). */
  overwrote?: number | null;
  writeAt?: number;
  /** lease.held when its write was sent (undefined without a lease, or without a write). */
  heldAtWrite?: boolean;
  lostAt?: number;
  releaseError?: string;
}

export interface RunEvent {
  kind: "armed" | "pause" | "resume" | "kill" | "held" | "stale-write" | "refused" | "lost" | "release-refused";
  instance: number;
  at: number;
  /** held: when the orchestrator let the holder go */
  until?: number;
  point?: string;
  why?: string;
  detail?: string;
  /** stale-write: the sales it wiped off the counter */
  undid?: number;
}

export interface StrategyResult {
  strategy: StrategyName;
  /** What stood in front of the instances: "nginx 1.22.1", or "the demo's own round-robin balancer". */
  balancer: string;
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
  /** Writes of the stock counter that landed. */
  writes: number;
  /** Writes that landed on a value other than the one their writer had read. */
  staleWrites: number;
  /** Orders the stock counter does not account for: accepted - (stock - unitsLeft). */
  salesUndone: number;
  /** Writes that did not land because their writer no longer held the lock (guard or lease check). */
  staleWritesRefused: number;
  /** Holders that went on believing they held the lock after another's acquire succeeded; null: no lock. */
  doubleHolders: number | null;
  /** Stretches in which two or more holders believed they held the lock. */
  overlaps: { start: number; end: number; holders: number }[];
  locksWithoutTtl: number;
  keysWithoutTtl: string[];
  releasesRefused: number;
  latencyMs: { p50: number | null; p99: number | null };
  /** HTTP status → count, as the buyers saw them. */
  statuses: Record<string, number>;
  /**
   * instance: the one that reached the fault point first once it was armed (null if none did).
   * next: where the next holder was held until the victim's late step had landed.
   */
  fault: {
    kind: "pause" | "kill"; at: string; where: string | null; next: string | null;
    instance: number | null; injected: boolean; armAfterSales: number;
    /** The victim's request: what it did, and whether its write was stale. */
    victim: { outcome?: Hold["outcome"]; heldAtWrite: boolean | null; staleWrite: boolean; undid: number } | null;
    /** The holder held at `next`, and for how long. */
    held: { instance: number; point: string; ms: number } | null;
  } | null;
  holds: Hold[];
  events: RunEvent[];
  window: { start: number; end: number };
  /** The shop instances' pids. */
  pids: number[];
}

export interface FlashSaleResult {
  redis: { url: string; version?: string; throwaway: boolean };
  /** What stood in front of the instances (the first strategy's). */
  balancer: string;
  options: Required<Omit<FlashSaleOptions, "redisUrl" | "signal" | "onProgress" | "onChild">> & { redisUrl?: string };
  strategies: StrategyResult[];
  /** Every process the run started (redis-server and shop instances); all have exited. */
  pids: number[];
  durationMs: number;
}

export declare function runFlashSale(options?: FlashSaleOptions): Promise<FlashSaleResult>;
