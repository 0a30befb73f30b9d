/** Stopping the command: its signals (to its whole group, or to it alone) and Ctrl-Z. */
import type { ChildProcess } from "node:child_process";
import type { Lease } from "../../lease/lease.js";

/** Delivers signals to the command: to its whole process group unless it runs in the foreground. */
export class Stopper {
  readonly #child: ChildProcess;
  readonly #group: boolean;
  readonly #killAfterMs: number;
  #killTimer: NodeJS.Timeout | undefined;
  #stopping = false;

  constructor(child: ChildProcess, group: boolean, killAfterMs: number) {
    this.#child = child;
    this.#group = group;
    this.#killAfterMs = killAfterMs;
  }

  /** Sends `signal` to the command (its group); nothing if it is gone already. */
  send(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      if (this.#group) process.kill(-pid, signal);
      else this.#child.kill(signal);
    } catch {
      // Already gone.
    }
  }

  /** SIGTERM now, SIGKILL after the grace period (at once when it is 0). */
  stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#killAfterMs === 0) {
      this.send("SIGKILL");
      return;
    }
    this.send("SIGTERM");
    this.#killTimer = setTimeout(() => this.send("SIGKILL"), this.#killAfterMs);
  }

  /**
   * After the command exited. When it was stopped for a lost lease, whatever it started in its
   * group and left running is killed now: none of it may keep working without the lock.
   */
  finish(stopping: boolean): void {
    clearTimeout(this.#killTimer);
    if (stopping && this.#group) this.send("SIGKILL");
  }
}

/**
 * Ctrl-Z for a command in its own process group. The terminal stops only the foreground group,
 * which is surelock's: were surelock to stop alone, the command would keep working while nobody
 * renews its lease (observed: the lock expired in Redis while the command ran on). So surelock
 * stops the command's group first (SIGSTOP, which cannot be ignored), then itself. On SIGCONT
 * (`fg`, `bg`) it looks at the lease before it continues the command: a lease that ran out while
 * stopped is lost, and the command is sent SIGTERM before SIGCONT, so the stop is delivered as
 * it wakes up.
 */
export class StopTogether {
  readonly #lease: Lease;
  readonly #stopper: Stopper;
  readonly #onStop = (): void => {
    this.#stopper.send("SIGSTOP");
    process.kill(process.pid, "SIGSTOP");
  };
  readonly #onContinue = (): void => {
    // Reading `held` checks the lease's validity; a lost lease aborts its signal at once, and
    // the abort listener sends the command SIGTERM.
    void this.#lease.held;
    this.#stopper.send("SIGCONT");
  };

  constructor(lease: Lease, stopper: Stopper) {
    this.#lease = lease;
    this.#stopper = stopper;
    process.on("SIGTSTP", this.#onStop);
    process.on("SIGCONT", this.#onContinue);
  }

  /** Stops listening: the command has exited. */
  dispose(): void {
    process.off("SIGTSTP", this.#onStop);
    process.off("SIGCONT", this.#onContinue);
  }
}
