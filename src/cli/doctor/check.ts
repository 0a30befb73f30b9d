/** What a doctor check reports, and how the checks build their lines. */

/** How a check ended: fine, worth a look, or a broken promise. */
export type Status = "ok" | "warn" | "fail";

/** One line of the checklist (and one entry of `--json`). */
export interface Check {
  /** The server checked (`host:port`), or `quorum` for checks across the `--redis` URLs. */
  readonly node: string;
  readonly check: string;
  readonly status: Status;
  readonly detail: string;
  /** The `clock` check only: the server's clock minus this host's, ms (± `boundMs`). */
  readonly offsetMs?: number;
  /** The `clock` check only: the bound of `offsetMs` (half the round trip), ms. */
  readonly boundMs?: number;
}

/** Builds a line of one server's checklist. */
export type Make = (name: string, status: Status, detail: string) => Check;

/** An error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Whether a restart keeps every lock change: appendfsync always; unknown without CONFIG. */
export type Durability = "yes" | "no" | "unknown";
