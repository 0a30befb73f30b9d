/** `exec --verbose`: the lock's life on stderr, read from surelock's diagnostics channels. */
import { channels } from "../../diagnostics.js";
import { formatDuration } from "../duration.js";
import { note } from "../output.js";

/**
 * One stderr line per event of `key` on the diagnostics channels, naming the lock as `subject`
 * (`lock "K"`, `semaphore "K"`). A loss is not among them: exec reports it itself, always, with
 * what it does about it. Returns the unsubscribe.
 */
export function logLockEvents(key: string, subject: string): () => void {
  const mine = (message: unknown): message is Record<string, unknown> =>
    typeof message === "object" && message !== null && (message as { key?: unknown }).key === key;
  const handlers: [keyof typeof channels, (message: unknown) => void][] = [
    ["wait", (m) => {
      if (!mine(m)) return;
      if (m.phase === "start") note(`waiting for ${subject}`);
      else if (m.phase === "unreachable") note(`still waiting for ${subject}, but Redis does not answer: ${m.error instanceof Error ? m.error.message : "?"}`);
      else if (m.phase === "reachable") note(`Redis answers again; waiting for ${subject}`);
    }],
    ["acquire", (m) => {
      if (mine(m)) note(`acquired ${subject} after ${formatDuration(Number(m.waitedMs))}, fencing token ${String(m.fencingToken)}`);
    }],
    ["extend", (m) => {
      if (mine(m)) note(`renewed ${subject} for ${formatDuration(Number(m.ttl))}`);
    }],
    ["release", (m) => {
      if (mine(m)) note(`released ${subject} after holding it ${formatDuration(Number(m.heldMs))}`);
    }],
    ["error", (m) => {
      if (typeof m === "object" && m !== null) {
        const { operation, error } = m as { operation?: unknown; error?: unknown };
        note(`${String(operation)} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }],
  ];
  for (const [name, handler] of handlers) channels[name].subscribe(handler);
  return () => {
    for (const [name, handler] of handlers) channels[name].unsubscribe(handler);
  };
}
