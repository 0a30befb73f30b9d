/**
 * The history of a run: every invocation and completion, every observation a holder made of its
 * lease, every fault, each stamped on the one monotonic clock (ms since the run's start). Workers
 * stream their events to the orchestrator, which writes them as JSONL and hands them to the
 * checkers. Everything here is plain data, so a history file can be read back and checked again.
 */

/** Which kind of lock a lease is of: each has its own exclusion rule. */
export type Prim = "mutex" | "read" | "write" | "sem";

/** What an error looked like, enough to classify it. */
export interface ErrorInfo {
  readonly name: string;
  readonly code?: string;
  readonly reason?: string;
  readonly message: string;
}

/** Who wrote an event: a worker's index, or -1 for the orchestrator (nemesis, sweeps). */
interface Stamp {
  readonly t: number;
  readonly w: number;
}

export type CallOp =
  | "acquire" | "tryAcquire" | "withLock" | "release" | "extend" | "isHeld"
  | "guard" | "counter-get" | "counter-set" | "foreign-try" | "close";

/** A call starts. `boundMs` is how long it may take (null: unbounded, it ends at close). */
export interface InvokeEvent extends Stamp {
  readonly type: "invoke";
  readonly call: string;
  readonly op: CallOp;
  readonly key?: string;
  readonly prim?: Prim;
  readonly lease?: string;
  readonly boundMs: number | null;
  readonly args?: Readonly<Record<string, string | number | boolean>>;
}

/** A call resolved. */
export interface OkEvent extends Stamp {
  readonly type: "ok";
  readonly call: string;
  readonly value?: string | number | boolean | null;
}

/** A call rejected. */
export interface FailEvent extends Stamp {
  readonly type: "fail";
  readonly call: string;
  readonly error: ErrorInfo;
}

/** An acquisition resolved with a lease (stamped after it resolved: never earlier than the grant). */
export interface LeaseEvent extends Stamp {
  readonly type: "lease";
  readonly call: string;
  readonly lease: string;
  readonly key: string;
  readonly prim: Prim;
  readonly token: string;
  readonly owner: string;
  readonly instance: number;
  readonly ttl: number;
  /** The lease this one was acquired inside (nested, forked or a late job). */
  readonly parent?: string;
  /** Acquired by a job that outlived the section it was scheduled in. */
  readonly late?: boolean;
  readonly permits?: number;
  /** A multiLock's lease: every key (`key` is the first) and each key's token (`token` is the first's). */
  readonly keys?: readonly string[];
  readonly tokens?: readonly string[];
}

/**
 * What the holder saw: `held` is `lease.held`, `aborted` is `lease.signal.aborted`. Stamped
 * BEFORE reading them, so a "held" observation at t is true of t.
 */
export interface ObsEvent extends Stamp {
  readonly type: "obs";
  readonly lease: string;
  readonly held: boolean;
  readonly aborted: boolean;
  readonly via: "poll" | "acquired" | "before-write" | "after-write" | "end" | "isHeld" | "extend";
}

/** A lease's signal aborted, with the LockLostError's reason. */
export interface AbortEvent extends Stamp {
  readonly type: "abort";
  readonly lease: string;
  readonly reason: string;
}

/** The watchdog (automatic) or extend() confirmed a lease, as `surelock:extend` reported it. */
export interface RenewEvent extends Stamp {
  readonly type: "renew";
  readonly key: string;
  readonly token: string;
  readonly ttl: number;
  readonly automatic: boolean;
}

/** The holder is done with the lease (released, or gave it up). */
export interface EndEvent extends Stamp {
  readonly type: "end";
  readonly lease: string;
}

/** A guarded write to a fenced register, and what the client learned of it. */
export interface GuardEvent extends Stamp {
  readonly type: "guard";
  readonly lease: string;
  readonly resource: string;
  readonly writeId: string;
  readonly token: string;
  readonly outcome: "written" | "refused" | "unknown";
}

/** A read-modify-write of a plain counter inside a section. */
export interface CounterEvent extends Stamp {
  readonly type: "counter";
  readonly lease: string;
  readonly key: string;
  readonly read: number;
  readonly wrote: number;
  /** ok: the SET was acknowledged; unknown: it failed (it may have been applied); skipped: lease no longer held. */
  readonly outcome: "ok" | "unknown" | "skipped";
}

/** A user-supplied AbortSignal fired. */
export interface SignalEvent extends Stamp {
  readonly type: "signal";
  readonly call: string;
}

/** Listeners a finished call left on the signal it was given (a leak). */
export interface ListenerLeakEvent extends Stamp {
  readonly type: "listener-leak";
  readonly call: string;
  readonly count: number;
}

export type FaultKind =
  | "pause-worker" | "pause-node" | "kill-node" | "latency" | "blackhole" | "reset" | "cut" | "failover"
  /** Wake-up messages (pub/sub pushes) held, then delivered late or lost; commands pass. */
  | "wakeups"
  /** One command connection's requests (a refresh, a renewal) held, then delivered late. */
  | "stall"
  /** Both on one node, the stall ending first: a grant heard of after it lapsed. */
  | "late-wakeup";

/** The nemesis acted. `dataLoss`: the fault can make a server forget acknowledged writes. */
export interface FaultEvent extends Stamp {
  readonly type: "fault";
  readonly fault: FaultKind;
  readonly phase: "start" | "end" | "skip" | "hit";
  readonly target: string;
  readonly detail?: Readonly<Record<string, string | number | boolean | null>>;
  readonly dataLoss?: boolean;
}

/** A worker's resource accounting after close(): what was left beyond its baseline. */
export interface LeakEvent extends Stamp {
  readonly type: "leaks";
  readonly handles: Readonly<Record<string, number>>;
  readonly listeners: Readonly<Record<string, number>>;
}

/**
 * A worker's flows were still running long after it was told to stop (calls that never settle
 * on their own: a deadlock): it closes its instances to end them. Calls open at this instant
 * count as never settled.
 */
export interface ForcedCloseEvent extends Stamp {
  readonly type: "forced-close";
  readonly open: number;
}

/** Free text from the orchestrator (phases of the run), shown in minimal histories. */
export interface NoteEvent extends Stamp {
  readonly type: "note";
  readonly text: string;
  /** "error": something that must not happen at all (an unhandled rejection, a worker crash). */
  readonly level?: "info" | "error";
}

/**
 * The worker's event loop ran nothing from `from` to this event's `t`: its heartbeat came that
 * much later than due (the process was starved of CPU, or stopped). No timer of the library can
 * fire in such a span, so a call's bound does not count it, as it does not count a pause-worker.
 */
export interface StallEvent extends Stamp {
  readonly type: "stall";
  readonly from: number;
}

export type HistoryEvent =
  | InvokeEvent | OkEvent | FailEvent | LeaseEvent | ObsEvent | AbortEvent | RenewEvent | EndEvent
  | GuardEvent | CounterEvent | SignalEvent | ListenerLeakEvent | FaultEvent | LeakEvent | NoteEvent | ForcedCloseEvent
  | StallEvent;

type Unstamp<E> = E extends unknown ? Omit<E, "t" | "w"> : never;

/** An event before the recorder stamps it with the time and the writer. */
export type Unstamped = Unstamp<HistoryEvent>;

/** Reads a JSONL history back. */
export function parseHistory(text: string): HistoryEvent[] {
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line) as HistoryEvent);
}

/** The describable part of any thrown value. */
export function errorInfo(error: unknown): ErrorInfo {
  if (!(error instanceof Error)) return { name: "NonError", message: String(error) };
  const e = error as Error & { code?: unknown; reason?: unknown };
  return {
    name: e.name,
    message: e.message.slice(0, 300),
    ...(typeof e.code === "string" && { code: e.code }),
    ...(typeof e.reason === "string" && { reason: e.reason }),
  };
}
