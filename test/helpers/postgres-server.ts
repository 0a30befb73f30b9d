// Real PostgreSQL servers for tests: each is a `postgres` process started by this process from its
// own data directory under /tmp, on a free 127.0.0.1 port, and stopped by pid (never by name). The
// data directory is a copy of one `initdb` template per machine and version (initdb takes seconds,
// a copy a fraction of one). PostgreSQL refuses to run as root: as root, the server runs as the
// `postgres` OS user through util-linux `setpriv`, which also has the kernel kill it if this process
// dies without running its handlers (--pdeathsig). The machine's own PostgreSQL is never touched.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { accessSync, chownSync, constants as fsConstants, cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { freePorts } from "./redis-topology.js";
import { assertSlowTier } from "./tier.js";

const HOST = "127.0.0.1";
const START_DEADLINE_MS = 20_000;
const STOP_GRACE_MS = 5_000;

export interface PostgresServer {
  readonly host: string;
  /** Fixed for the server's life, across restart(). */
  readonly port: number;
  /** The postmaster's pid (changes at restart()). */
  readonly pid: number;
  /** A connection string for the superuser `postgres`, database `postgres`. */
  readonly url: string;
  /** Pool settings for `pg.Pool` (host, port, user, database). */
  readonly config: { host: string; port: number; user: string; database: string };
  readonly alive: boolean;
  /** Runs one statement as the superuser on a fresh connection. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** SIGKILL the postmaster (its backends end with it): the data directory stays for restart(). */
  kill(): Promise<void>;
  /** A fast shutdown (SIGINT), then start again on the same port and data. */
  restart(): Promise<void>;
  /** A fast shutdown, SIGKILL after 5 s; removes the data directory. Idempotent. */
  stop(): Promise<void>;
  logTail(lines?: number): string;
}

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const dir = path.join(root, v, "bin");
    try {
      accessSync(path.join(dir, "postgres"), fsConstants.X_OK);
      return dir;
    } catch {
      // try the next version
    }
  }
  throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)");
}

const asRoot = process.getuid?.() === 0;

/** The command prefix that runs a server binary: as `postgres` through setpriv when we are root. */
function runAs(): { prefix: string[]; uid?: number; gid?: number } {
  if (!asRoot) return { prefix: [] };
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
  if (!setpriv) throw new Error("running as root needs util-linux setpriv to start PostgreSQL as the postgres user");
  return { prefix: [setpriv, "--reuid", "postgres", "--regid", "postgres", "--init-groups", "--pdeathsig", "SIGKILL"], uid, gid };
}

/** The initdb template for this machine and version, made once (atomically, by rename). */
function template(bin: string): string {
  const version = path.basename(path.dirname(bin));
  const dir = path.join(os.tmpdir(), `surelock-pg-template-${version}`);
  if (existsSync(path.join(dir, "PG_VERSION"))) return dir;
  const who = runAs();
  const scratch = mkdtempSync(path.join(os.tmpdir(), "surelock-pg-initdb-"));
  if (who.uid !== undefined) chownSync(scratch, who.uid, who.gid!);
  const data = path.join(scratch, "data");
  const [cmd, ...args] = [...who.prefix, path.join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"];
  execFileSync(cmd!, args, { stdio: "pipe" });
  try {
    renameSync(data, dir);
  } catch (e) {
    // Another process made it first: theirs is as good.
    if (!existsSync(path.join(dir, "PG_VERSION"))) throw e;
  }
  rmSync(scratch, { recursive: true, force: true });
  return dir;
}

const running = new Set<ManagedPostgres>();
let hooked = false;
function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", () => {
    for (const s of running) s.killSync();
  });
}

class ManagedPostgres implements PostgresServer {
  readonly host = HOST;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log: string[] = [];

  constructor(readonly port: number, private readonly dir: string, private readonly bin: string, private readonly settings: string[]) {}

  get pid(): number {
    return this.child?.pid ?? -1;
  }
  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }
  get url(): string {
    return `postgres://postgres@${HOST}:${this.port}/postgres`;
  }
  get config(): { host: string; port: number; user: string; database: string } {
    return { host: HOST, port: this.port, user: "postgres", database: "postgres" };
  }

  async start(): Promise<void> {
    assertSlowTier("a PostgreSQL server");
    const who = runAs();
    // fsync off: a killed server's writes are still in the OS's cache. synchronous_commit stays on:
    // a killed server must not lose a commit it acknowledged (a lease the store granted).
    const [cmd, ...args] = [
      ...who.prefix, path.join(this.bin, "postgres"), "-D", this.dir, "-p", String(this.port), "-k", this.dir,
      "-c", `listen_addresses=${HOST}`, "-c", "fsync=off", "-c", "full_page_writes=off",
      "-c", "shared_buffers=16MB", "-c", "max_connections=60", "-c", "log_min_messages=warning", ...this.settings,
    ];
    const child = spawn(cmd!, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    const keep = (b: Buffer) => {
      this.log.push(...b.toString("utf8").split("\n").filter(Boolean));
      if (this.log.length > 400) this.log.splice(0, this.log.length - 400);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    running.add(this);
    hook();
    const deadline = Date.now() + START_DEADLINE_MS;
    for (;;) {
      if (!this.alive) throw new Error(`postgres on port ${this.port} exited at start:\n${this.logTail(30)}`);
      try {
        await this.query("SELECT 1");
        return;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`postgres on port ${this.port} not ready in ${START_DEADLINE_MS} ms: ${String(e)}\n${this.logTail(30)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: 5_000, query_timeout: 10_000 });
    client.on("error", () => {});
    await client.connect();
    try {
      return await client.query<R>(text, values);
    } finally {
      await client.end().catch(() => {});
    }
  }

  private async halt(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    child.kill(signal);
    const timer = setTimeout(() => {
      if (this.alive) child.kill("SIGKILL");
    }, STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
    running.delete(this);
  }

  async kill(): Promise<void> {
    await this.halt("SIGKILL");
    // The postmaster's children see it gone and exit on their own; wait for the shared memory to go.
    for (let i = 0; i < 100 && existsSync(path.join(this.dir, "postmaster.pid")); i++) {
      try {
        rmSync(path.join(this.dir, "postmaster.pid"));
      } catch {
        // keep trying
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async restart(): Promise<void> {
    await this.halt("SIGINT");
    await this.start();
  }

  async stop(): Promise<void> {
    await this.halt("SIGINT");
    running.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }

  killSync(): void {
    if (this.alive) this.child!.kill("SIGKILL");
  }

  logTail(lines = 40): string {
    return this.log.slice(-lines).join("\n");
  }
}

/** Starts a PostgreSQL server of its own; `settings` are extra `-c name=value` pairs. */
export async function startPostgres(options: { settings?: Record<string, string | number> } = {}): Promise<PostgresServer> {
  const bin = binDir();
  const base = template(bin);
  const dir = mkdtempSync(path.join(os.tmpdir(), "surelock-pg-"));
  cpSync(base, dir, { recursive: true });
  writeFileSync(path.join(dir, "postmaster.opts"), "");
  const who = runAs();
  if (who.uid !== undefined) execFileSync("chown", ["-R", `${who.uid}:${who.gid}`, dir]);
  execFileSync("chmod", ["700", dir]);
  const [port] = await freePorts(1, (p) => p !== 5432);
  const settings = Object.entries(options.settings ?? {}).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  const server = new ManagedPostgres(port!, dir, bin, settings);
  try {
    await server.start();
  } catch (e) {
    await server.stop();
    throw e;
  }
  return server;
}
