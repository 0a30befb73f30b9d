/**
 * Helpers of the CLI tests: the CLI as a real child process (through tsx, so no build is
 * needed), a client and a Surelock for the test's own side of a race, and waits that end on an
 * event or fail at a deadline.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Cluster, Redis } from "ioredis";
import { Surelock } from "../../src/index.js";
import { KeySpace } from "../../src/keys.js";
import type { ClusterSet, RedisServer } from "../helpers/redis-topology.js";
import { within } from "../helpers/fixtures.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The CLI entry point, run through tsx (no build needed). */
export const MAIN = join(ROOT, "src", "cli", "main.ts");

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The surelock processes started here that have not exited yet. */
const live = new Set<Cli>();

/** A running `surelock` process. */
export class Cli {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<CliResult>;

  constructor(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
    // No REDIS_URL from the developer's shell: every test says which server it means.
    const inherited = { ...process.env };
    delete inherited.REDIS_URL;
    this.child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
      cwd: ROOT,
      env: { ...inherited, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout?.setEncoding("utf8").on("data", (chunk: string) => { this.stdout += chunk; });
    this.child.stderr?.setEncoding("utf8").on("data", (chunk: string) => { this.stderr += chunk; });
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        live.delete(this);
        resolve({ code, signal, stdout: this.stdout, stderr: this.stderr });
      });
    });
  }

  /** Resolves with the result, or fails the test if the CLI is still running after `ms`. */
  result(ms = 20_000): Promise<CliResult> {
    return within(ms, this.exited, `surelock to exit (stderr so far: ${JSON.stringify(this.stderr)})`);
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}

/**
 * Stops the surelock processes a test left running (it failed before they ended): SIGTERM ends a
 * wait and is passed on to a running command, so no process outlives its test. For `afterEach`.
 */
export async function stopLeftovers(): Promise<void> {
  const left = [...live];
  for (const run of left) run.kill("SIGTERM");
  await Promise.all(left.map((run) => run.result()));
}

/** Runs `surelock args...` to the end. */
export function cli(args: readonly string[], env?: NodeJS.ProcessEnv, ms?: number): Promise<CliResult> {
  return new Cli(args, env).result(ms);
}

export { within } from "../helpers/fixtures.js";

/** Polls `check` until it returns true: for state that has no event to wait on (files, Redis). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Only to prove that something did NOT happen within a window. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A scratch directory, removed by `cleanup`. */
export class Scratch {
  readonly dir = mkdtempSync(join(tmpdir(), "surelock-cli-"));

  path(name: string): string {
    return join(this.dir, name);
  }

  read(name: string): string {
    try {
      return readFileSync(this.path(name), "utf8");
    } catch {
      return "";
    }
  }

  /** Waits until the file contains `text`. */
  async waitFor(name: string, text: string, ms?: number): Promise<string> {
    await eventually(`${name} to contain ${JSON.stringify(text)}`, () => this.read(name).includes(text), ms);
    return this.read(name);
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `node -e <script> [args]` as a command line for exec: portable, no shell quoting. */
export function nodeCommand(script: string, ...args: string[]): string[] {
  return [process.execPath, "-e", script, ...args];
}

/** The test's own clients and Surelock instances, closed by `close`. */
export class Side {
  readonly #redis: (Redis | Cluster)[] = [];
  readonly #locks: Surelock[] = [];

  client(server: RedisServer): Redis {
    const redis = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    redis.on("error", () => {});
    this.#redis.push(redis);
    return redis;
  }

  locks(server: RedisServer | readonly RedisServer[], prefix = "surelock"): Surelock {
    const redis = Array.isArray(server) ? server.map((s) => this.client(s)) : this.client(server as RedisServer);
    const locks = new Surelock({ redis, prefix });
    this.#locks.push(locks);
    return locks;
  }

  /** A Surelock over an ioredis Cluster client. */
  clusterLocks(set: ClusterSet): Surelock {
    const cluster = new Cluster(set.startupNodes(), { redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2_000 } });
    cluster.on("error", () => {});
    this.#redis.push(cluster);
    const locks = new Surelock({ redis: cluster });
    this.#locks.push(locks);
    return locks;
  }

  async close(): Promise<void> {
    await Promise.all(this.#locks.splice(0).map((l) => l.close()));
    for (const r of this.#redis.splice(0)) r.disconnect();
  }
}

/** True while `pid` runs (a zombie waiting to be reaped counts as ended). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

/** The hold fields of a mutex's lock hash ({} when free: a free lock keeps only its counter, c and b). */
export async function holder(server: RedisServer, key: string, prefix = "surelock"): Promise<Record<string, string>> {
  const flat = (await server.command("HGETALL", new KeySpace(prefix).exclusive(key).lock)) as string[];
  const out: Record<string, string> = {};
  let counter: string | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = flat[i] as string;
    if (field === "c") counter = flat[i + 1] as string;
    else if (field !== "b") out[field] = flat[i + 1] as string;
  }
  // An uncontended hold keeps no token or entry count of its own: its token is the counter, one entry.
  if (out.h !== undefined) {
    out.t ??= counter ?? "";
    out.n ??= "1";
  }
  return out;
}

/** Fails if any key under `prefix` lacks an expiry: the invariant every test must keep. */
export async function assertEveryKeyExpires(server: RedisServer, prefix = "surelock"): Promise<void> {
  const keys = (await server.command("KEYS", `${prefix}:*`)) as string[];
  for (const key of keys) {
    const pttl = Number(await server.command("PTTL", key));
    if (pttl === -1) throw new Error(`${key} has no expiry`);
  }
}
