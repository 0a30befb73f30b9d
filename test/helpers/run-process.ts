/**
 * Runs a program to its end with a deadline and collects what it printed: for tests that drive
 * npm, tsc, the built CLI or a docs snippet as a user would. A program still running at the
 * deadline is killed (with its process group) and the test fails with its output so far.
 */
import { spawn } from "node:child_process";
import { assertSlowTier } from "./tier.js";

export interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly cwd?: string;
  /** Added to (or, with `undefined`, removed from) the inherited environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Written to stdin, which is then closed; stdin is empty otherwise. */
  readonly input?: string;
  readonly timeoutMs: number;
}

export function runProcess(command: string, args: readonly string[], o: RunOptions): Promise<Finished> {
  assertSlowTier(`a process (${command})`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(o.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  // Its own process group, so that the deadline kills whatever it started too.
  const child = spawn(command, [...args], { cwd: o.cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => { stdout += chunk; });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => { stderr += chunk; });
  child.stdin.on("error", () => {}); // a program that exits without reading its input
  child.stdin.end(o.input ?? "");
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      reject(new Error(`${command} ${args.join(" ")} did not finish within ${o.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, o.timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Like runProcess, but a non-zero exit fails with everything the program printed. */
export async function runOk(command: string, args: readonly string[], o: RunOptions): Promise<Finished> {
  const r = await runProcess(command, args, o);
  if (r.code !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited with ${r.code ?? r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return r;
}
