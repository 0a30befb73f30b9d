// Real redis-server topologies for tests: standalone, N independent primaries,
// Sentinel sets and Cluster. Every process is a child of this process, bound to
// 127.0.0.1 on a free port, and is killed by pid (never by name) on stop, on
// process exit, and — where util-linux `setpriv` exists — by the kernel if this
// process itself dies without running any handler.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { assertSlowTier } from './tier.js';

export interface HostPort {
  host: string;
  port: number;
}

/** A decoded RESP2 reply. Error replies nested in arrays stay as Error values. */
export type RespReply = string | number | null | Error | RespReply[];

export interface RedisServer extends HostPort {
  readonly host: string;
  /** Fixed for the server's lifetime, including across restart(). */
  readonly port: number;
  /** pid of the current process (changes after restart()). */
  readonly pid: number;
  readonly url: string;
  readonly kind: 'redis' | 'sentinel';
  /** Working directory (removed by stop()). */
  readonly dir: string;
  /** True while the process is running (paused counts as running). */
  readonly alive: boolean;
  readonly paused: boolean;
  /** One command on a fresh short-lived connection; 10 s timeout. */
  command(...args: (string | number)[]): Promise<RespReply>;
  commandWithTimeout(timeoutMs: number, ...args: (string | number)[]): Promise<RespReply>;
  /** INFO [section] parsed into key/value pairs. */
  info(section?: string): Promise<Record<string, string>>;
  /** SIGSTOP; resolves once the kernel reports the process stopped. */
  pause(): Promise<void>;
  /** SIGCONT; resolves once the process runs again. */
  resume(): Promise<void>;
  /** SIGKILL and wait for exit. Keeps dir so restart() finds its files. */
  kill(): Promise<void>;
  /** Start again on the same port with the same args (kills a live process first). */
  restart(): Promise<void>;
  /** SIGTERM, SIGKILL after 3 s; removes dir. Idempotent. */
  stop(): Promise<void>;
  /** Last `lines` lines of the server's stdout/stderr. */
  logTail(lines?: number): string;
}

export interface StartOptions {
  /** Extra redis-server arguments, e.g. ['--maxmemory', '10mb']. */
  args?: string[];
}

export interface SentinelSet {
  primary: RedisServer;
  replicas: RedisServer[];
  sentinels: RedisServer[];
  masterName: string;
  sentinelAddresses(): HostPort[];
  /** The primary as the first answering sentinel sees it. */
  currentPrimary(): Promise<HostPort>;
  stop(): Promise<void>;
}

export interface ClusterSet {
  nodes: RedisServer[];
  primaries: RedisServer[];
  replicas: RedisServer[];
  startupNodes(): HostPort[];
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const START_DEADLINE_MS = 10_000;
const STOP_GRACE_MS = 3_000;

// ---------------------------------------------------------------------------
// Binary discovery

let binaryCache: string | undefined;
export function redisServerBinary(): string {
  if (binaryCache) return binaryCache;
  const candidates = [
    ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((d) => path.join(d, 'redis-server')),
    '/usr/bin/redis-server',
    '/usr/local/bin/redis-server',
  ];
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return (binaryCache = c);
    } catch {
      // try next
    }
  }
  throw new Error('redis-server not found on PATH, /usr/bin or /usr/local/bin (apt-get install redis-server)');
}

let versionCache: [number, number, number] | undefined;
/** [major, minor, patch] of the redis-server binary. */
export function redisVersion(): [number, number, number] {
  if (versionCache) return versionCache;
  const out = execFileSync(redisServerBinary(), ['--version'], { encoding: 'utf8' });
  const m = /v=(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new Error(`cannot parse redis-server --version: ${out}`);
  return (versionCache = [Number(m[1]), Number(m[2]), Number(m[3])]);
}

// Use `setpriv --pdeathsig SIGKILL` so the kernel reaps servers even if this
// process is SIGKILLed (no 'exit' handler runs then). It execs, so pid is kept.
let setprivCache: string | null | undefined;
function setprivBinary(): string | null {
  if (setprivCache !== undefined) return setprivCache;
  setprivCache = null;
  if (process.platform !== 'linux') return null;
  for (const c of ['/usr/bin/setpriv', '/bin/setpriv']) {
    try {
      accessSync(c, fsConstants.X_OK);
      execFileSync(c, ['--pdeathsig', 'SIGKILL', 'true'], { stdio: 'ignore' });
      return (setprivCache = c);
    } catch {
      // unavailable or too old for --pdeathsig
    }
  }
  return null;
}

/** True when servers are also killed by the kernel if this process dies by SIGKILL. */
export function parentDeathSignalSupported(): boolean {
  return setprivBinary() !== null;
}

// ---------------------------------------------------------------------------
// RESP2 client

function encodeCommand(args: (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** Parses one reply at `pos`; undefined when more bytes are needed. */
function parseReply(buf: Buffer, pos: number): { value: RespReply; pos: number } | undefined {
  if (pos >= buf.length) return undefined;
  const eol = buf.indexOf('\r\n', pos);
  if (eol === -1) return undefined;
  const type = String.fromCharCode(buf[pos]!);
  const line = buf.toString('utf8', pos + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, pos: next };
    case '-':
      return { value: new Error(line), pos: next };
    case ':':
      return { value: Number(line), pos: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, pos: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString('utf8', next, next + len), pos: next + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, pos: next };
      const items: RespReply[] = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = parseReply(buf, p);
        if (!r) return undefined;
        items.push(r.value);
        p = r.pos;
      }
      return { value: items, pos: p };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Sends one command on a fresh connection and returns the first reply.
 * Error replies reject with an Error whose message is the server's text.
 */
export function respCommand(
  target: HostPort,
  args: (string | number)[],
  opts: { timeoutMs?: number } = {},
): Promise<RespReply> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const where = `${target.host}:${target.port} ${String(args[0] ?? '')}`;
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let settled = false;
    const socket = net.connect({ host: target.host, port: target.port });
    const finish = (err: Error | null, value?: RespReply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value ?? null);
    };
    const timer = setTimeout(() => finish(new Error(`${where}: timed out after ${timeoutMs} ms`)), timeoutMs);
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(encodeCommand(args)));
    socket.on('data', (chunk) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      let r;
      try {
        r = parseReply(buf, 0);
      } catch (e) {
        finish(e as Error);
        return;
      }
      if (!r) return;
      if (r.value instanceof Error) finish(r.value);
      else finish(null, r.value);
    });
    socket.on('error', (e) => finish(new Error(`${where}: ${e.message}`)));
    socket.on('close', () => finish(new Error(`${where}: connection closed before a reply`)));
  });
}

function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** Flat [k, v, k, v] arrays (SENTINEL replies) to objects. */
function pairs(reply: RespReply): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  return out;
}

// ---------------------------------------------------------------------------
// Small async utilities

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns a non-undefined value or the deadline passes. */
async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() >= deadline) {
      const why = lastErr instanceof Error ? ` (last error: ${lastErr.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await delay(intervalMs);
  }
}

// ---------------------------------------------------------------------------
// Ports

// Ports handed out by this process, so two servers started concurrently in one
// file never get the same one. Other processes are handled by bind retries.
const handedOut = new Set<number>();

function listenEphemeral(): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen({ port: 0, host: HOST, exclusive: true }, () => resolve(s));
  });
}

/** n distinct free ports on 127.0.0.1 (all held open together, then released). */
export async function freePorts(n: number, accept: (p: number) => boolean = () => true): Promise<number[]> {
  const held: net.Server[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < n; tries++) {
      if (tries > 200 + n * 20) throw new Error('could not find free ports');
      const s = await listenEphemeral();
      held.push(s);
      const p = (s.address() as net.AddressInfo).port;
      if (!handedOut.has(p) && p !== 6379 && accept(p)) ports.push(p);
    }
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
  for (const p of ports) handedOut.add(p);
  return ports;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: HOST, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

// ---------------------------------------------------------------------------
// Process registry: kill stragglers synchronously on exit

const registry = new Set<ManagedServer>();
let hooksInstalled = false;

function killAllSync(): void {
  for (const s of registry) s.killSync();
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // 'exit' covers normal exit, process.exit() and uncaught exceptions.
  process.on('exit', killAllSync);
  // Signals skip 'exit': kill children, then re-raise if nobody else handles it.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllSync();
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...registry].map((s) => s.stop()));
}

// ---------------------------------------------------------------------------
// One managed redis-server process

interface ServerSpec {
  kind: 'redis' | 'sentinel';
  /** How many ports to allocate: the first is the client port. */
  portCount: number;
  acceptPort?: (p: number) => boolean;
  /** Arguments for redis-server, from the allocated ports and the dir. */
  args: (ports: number[], dir: string) => string[];
  /** Files written into dir when missing (e.g. sentinel.conf). */
  files?: (ports: number[], dir: string) => Record<string, string>;
}

class BindError extends Error {}

function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

class ManagedServer implements RedisServer {
  readonly host = HOST;
  readonly kind: 'redis' | 'sentinel';
  private ports: number[] = [];
  private dirPath = '';
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log = '';
  private isPaused = false;
  private stopping: Promise<void> | undefined;

  constructor(private readonly spec: ServerSpec) {
    this.kind = spec.kind;
  }

  get port(): number {
    return this.ports[0]!;
  }
  get pid(): number {
    return this.child?.pid ?? -1;
  }
  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }
  get dir(): string {
    return this.dirPath;
  }
  get alive(): boolean {
    // pid is undefined when spawn itself failed (e.g. ENOENT).
    const c = this.child;
    return !!c && c.pid !== undefined && c.exitCode === null && c.signalCode === null;
  }
  get paused(): boolean {
    return this.isPaused;
  }
  /** All allocated ports (client port first; cluster bus port second if any). */
  get allPorts(): readonly number[] {
    return this.ports;
  }

  /** First start: allocate ports, retrying when another process grabs one. */
  async start(): Promise<void> {
    assertSlowTier('a redis-server');
    let lastErr: unknown;
    for (let attempt = 0; attempt < 6; attempt++) {
      this.ports = await freePorts(this.spec.portCount, this.spec.acceptPort);
      try {
        await this.launch();
        return;
      } catch (e) {
        lastErr = e;
        if (!(e instanceof BindError)) break;
        // Fresh dir: files like sentinel.conf name the port that just failed.
        rmSync(this.dirPath, { recursive: true, force: true });
      }
    }
    await this.stop();
    throw lastErr;
  }

  private async launch(): Promise<void> {
    if (!this.dirPath || !existsSync(this.dirPath)) {
      this.dirPath = mkdtempSync(path.join(os.tmpdir(), `surelock-${this.kind}-`));
    }
    for (const [name, content] of Object.entries(this.spec.files?.(this.ports, this.dirPath) ?? {})) {
      const f = path.join(this.dirPath, name);
      if (!existsSync(f)) writeFileSync(f, content);
    }
    const args = this.spec.args(this.ports, this.dirPath);
    const setpriv = setprivBinary();
    const [cmd, argv] = setpriv
      ? [setpriv, ['--pdeathsig', 'SIGKILL', redisServerBinary(), ...args]]
      : [redisServerBinary(), args];

    installHooks();
    this.log = '';
    this.isPaused = false;
    this.stopping = undefined;
    const child = spawn(cmd, argv, { cwd: this.dirPath, stdio: ['ignore', 'pipe', 'pipe'], detached: false });
    this.child = child;
    registry.add(this);
    let spawnError: Error | undefined;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', (e) => {
        spawnError = e;
        resolve();
      });
    });
    const onData = (chunk: Buffer) => {
      // Keep the last ~64 KiB: enough for a useful tail, bounded memory.
      this.log = (this.log + chunk.toString('utf8')).slice(-65536);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    // A forgotten server must not keep the test process alive; exit hooks kill it.
    child.unref();
    (child.stdout as unknown as net.Socket).unref?.();
    (child.stderr as unknown as net.Socket).unref?.();

    const deadline = Date.now() + START_DEADLINE_MS;
    for (;;) {
      if (!this.alive) {
        await this.exited;
        const tail = this.logTail(20);
        const msg = `${this.kind} on port ${this.port} exited during startup` +
          `${spawnError ? ` (${spawnError.message})` : ''}:\n${tail}`;
        if (/Address already in use|Failed listening|Could not create server TCP/i.test(tail)) throw new BindError(msg);
        throw new Error(msg);
      }
      try {
        const pong = await respCommand(this, ['PING'], { timeoutMs: 500 });
        if (pong === 'PONG') {
          // Make sure the PONG came from OUR process, not another test's server
          // that won the race for this port.
          const info = parseInfo(String(await respCommand(this, ['INFO', 'server'], { timeoutMs: 1000 })));
          if (Number(info.process_id) !== child.pid) {
            await this.kill();
            throw new BindError(`port ${this.port} is served by pid ${info.process_id}, not ours (${child.pid})`);
          }
          return;
        }
      } catch (e) {
        if (e instanceof BindError) throw e;
        // not listening yet
      }
      if (Date.now() >= deadline) {
        const tail = this.logTail(30);
        await this.kill();
        throw new Error(`${this.kind} on port ${this.port} did not answer PING within ${START_DEADLINE_MS} ms; log tail:\n${tail}`);
      }
      await delay(25);
    }
  }

  command(...args: (string | number)[]): Promise<RespReply> {
    return respCommand(this, args);
  }

  commandWithTimeout(timeoutMs: number, ...args: (string | number)[]): Promise<RespReply> {
    return respCommand(this, args, { timeoutMs });
  }

  async info(section?: string): Promise<Record<string, string>> {
    return parseInfo(String(await this.command(...(section ? ['INFO', section] : ['INFO']))));
  }

  async pause(): Promise<void> {
    if (!this.alive) throw new Error(`cannot pause: ${this.kind} on port ${this.port} is not running`);
    process.kill(this.pid, 'SIGSTOP');
    this.isPaused = true;
    const pid = this.pid;
    // Signal delivery is asynchronous; wait until the kernel shows it stopped.
    if (procState(pid) !== undefined) await waitFor('process to stop', 2000, async () => (procState(pid) === 'T' ? true : undefined), 5);
  }

  async resume(): Promise<void> {
    if (!this.alive) return;
    process.kill(this.pid, 'SIGCONT');
    this.isPaused = false;
    const pid = this.pid;
    if (procState(pid) !== undefined) await waitFor('process to continue', 2000, async () => (procState(pid) !== 'T' ? true : undefined), 5);
  }

  async kill(): Promise<void> {
    if (this.alive) {
      process.kill(this.pid, 'SIGKILL');
      await this.waitExit(5000);
    }
    this.isPaused = false;
  }

  async restart(): Promise<void> {
    await this.kill();
    // The same port may be briefly taken (or grabbed by another test process).
    let lastErr: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        if (!(await portIsFree(this.port))) throw new BindError(`port ${this.port} still in use`);
        await this.launch();
        return;
      } catch (e) {
        lastErr = e;
        if (!(e instanceof BindError)) throw e;
        await delay(100);
      }
    }
    throw lastErr;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.alive) {
        const pid = this.pid;
        try {
          if (this.isPaused) process.kill(pid, 'SIGCONT');
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
        if (!(await this.waitExit(STOP_GRACE_MS, false))) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
          await this.waitExit(5000);
        }
      }
      this.isPaused = false;
      registry.delete(this);
      if (this.dirPath) rmSync(this.dirPath, { recursive: true, force: true });
    })();
    return this.stopping;
  }

  /** Resolves true once exited; false (or throws) on timeout. */
  private async waitExit(timeoutMs: number, throwOnTimeout = true): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    // The (ref'd) timer keeps the event loop alive even though the child is unref'd.
    const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    const ok = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    if (!ok && throwOnTimeout) throw new Error(`pid ${this.pid} did not exit within ${timeoutMs} ms`);
    return ok;
  }

  /** Synchronous last resort used from process 'exit'. */
  killSync(): void {
    if (this.alive) {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (this.dirPath) {
      try {
        rmSync(this.dirPath, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  }

  logTail(lines = 50): string {
    return this.log.split('\n').slice(-lines - 1).join('\n');
  }
}

// ---------------------------------------------------------------------------
// Topologies

function baseArgs(port: number, dir: string, extra: string[] = []): string[] {
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
  // Diskless full sync waits 5 s by default for more replicas to batch up;
  // that alone made every replica take ~5 s to come up.
  args.push('--repl-diskless-sync-delay', '0');
  // Redis 7 blocks DEBUG by default; tests use DEBUG SLEEP to simulate stalls.
  if (redisVersion()[0] >= 7) args.push('--enable-debug-command', 'local');
  return [...args, ...extra];
}

async function startServer(spec: ServerSpec): Promise<ManagedServer> {
  const s = new ManagedServer(spec);
  await s.start();
  return s;
}

/** Starts servers and, if any fails, stops the ones that did start. */
async function startMany(specs: ServerSpec[]): Promise<ManagedServer[]> {
  const results = await Promise.allSettled(specs.map(startServer));
  const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(ok.map((s) => s.stop()));
    throw failed.reason;
  }
  return ok;
}

async function cleanupOnError<T>(servers: () => RedisServer[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    await Promise.all(servers().map((s) => s.stop()));
    throw e;
  }
}

function standaloneSpec(extra: string[] = []): ServerSpec {
  return { kind: 'redis', portCount: 1, args: ([p], dir) => baseArgs(p!, dir, extra) };
}

/**
 * A data node of a Sentinel set: its settings in a redis.conf of its own, as in production, so
 * that Sentinel's CONFIG REWRITE (after it promotes or re-points a node) survives a restart. With
 * command-line arguments only, a node killed after a failover came back in its launch role: the
 * first replica as a replica of the demoted primary, which replicated from it — no primary at all.
 */
function configFileSpec(extra: string[] = []): ServerSpec {
  return {
    kind: 'redis',
    portCount: 1,
    files: ([p], dir) => ({ 'redis.conf': `${asConfig(baseArgs(p!, dir, extra)).join('\n')}\n` }),
    args: (_p, dir) => [path.join(dir, 'redis.conf')],
  };
}

/** `--name value...` arguments as redis.conf lines (an empty value as ""). */
function asConfig(args: readonly string[]): string[] {
  const lines: string[] = [];
  for (const arg of args) {
    if (arg.startsWith('--')) lines.push(arg.slice(2));
    else lines[lines.length - 1] += ` ${arg === '' ? '""' : arg}`;
  }
  return lines;
}

export async function startStandalone(opts: StartOptions = {}): Promise<RedisServer> {
  return startServer(standaloneSpec(opts.args));
}

/** N independent primaries (Redlock quorum mode). */
export async function startPrimaries(n: number, opts: StartOptions = {}): Promise<RedisServer[]> {
  return startMany(Array.from({ length: n }, () => standaloneSpec(opts.args)));
}

export async function startSentinelSet(
  opts: { replicas?: number; sentinels?: number; masterName?: string; args?: string[] } = {},
): Promise<SentinelSet> {
  const nReplicas = opts.replicas ?? 1;
  const nSentinels = opts.sentinels ?? 3;
  const masterName = opts.masterName ?? 'mymaster';
  // 2 of 3 as asked; scaled as a majority for other sizes so failover can happen.
  const quorum = Math.floor(nSentinels / 2) + 1;
  const all: RedisServer[] = [];

  return cleanupOnError(() => all, async () => {
    const primary = await startServer(configFileSpec(opts.args));
    all.push(primary);
    const replicas = await startMany(
      Array.from({ length: nReplicas }, () => configFileSpec([...(opts.args ?? []), '--replicaof', HOST, String(primary.port)])),
    );
    all.push(...replicas);
    await Promise.all(
      replicas.map((r) =>
        waitFor(`replica ${r.port} link up`, 10_000, async () =>
          (await r.info('replication')).master_link_status === 'up' ? true : undefined),
      ),
    );
    // Sentinels start after replicas are linked: their first INFO to the primary
    // then lists the replicas, instead of waiting ~10 s for the next INFO round.
    const sentinels = await startMany(
      Array.from({ length: nSentinels }, (): ServerSpec => ({
        kind: 'sentinel',
        portCount: 1,
        files: ([p], dir) => ({
          // Sentinel rewrites its config, so it must be a writable file of its own.
          'sentinel.conf': [
            `port ${p}`,
            `bind ${HOST}`,
            'daemonize no',
            `dir ${dir}`,
            'sentinel resolve-hostnames no',
            `sentinel monitor ${masterName} ${HOST} ${primary.port} ${quorum}`,
            `sentinel down-after-milliseconds ${masterName} 1000`,
            `sentinel failover-timeout ${masterName} 5000`,
            '',
          ].join('\n'),
        }),
        args: (_p, dir) => [path.join(dir, 'sentinel.conf'), '--sentinel'],
      })),
    );
    all.push(...sentinels);

    await Promise.all(
      sentinels.map((s) =>
        waitFor(`sentinel ${s.port} to see ${nReplicas} replicas and ${nSentinels - 1} sentinels`, 15_000, async () => {
          const healthy = (r: Record<string, string>) => !/s_down|o_down|disconnected/.test(r.flags ?? '');
          const reps = ((await s.command('SENTINEL', 'REPLICAS', masterName)) as RespReply[]).map(pairs);
          const peers = ((await s.command('SENTINEL', 'SENTINELS', masterName)) as RespReply[]).map(pairs);
          return reps.length === nReplicas && reps.every(healthy) && peers.length === nSentinels - 1 && peers.every(healthy)
            ? true
            : undefined;
        }),
      ),
    );

    const set: SentinelSet = {
      primary,
      replicas,
      sentinels,
      masterName,
      sentinelAddresses: () => sentinels.map((s) => ({ host: s.host, port: s.port })),
      async currentPrimary() {
        let lastErr: unknown;
        for (const s of sentinels) {
          if (!s.alive || s.paused) continue;
          try {
            const r = await s.commandWithTimeout(2000, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName);
            if (Array.isArray(r) && r.length === 2) return { host: String(r[0]), port: Number(r[1]) };
          } catch (e) {
            lastErr = e;
          }
        }
        throw new Error(`no sentinel answered GET-MASTER-ADDR-BY-NAME${lastErr instanceof Error ? `: ${lastErr.message}` : ''}`);
      },
      async stop() {
        // Sentinels first so they do not start a failover while the data nodes go away.
        await Promise.all(sentinels.map((s) => s.stop()));
        await Promise.all([primary, ...replicas].map((s) => s.stop()));
      },
    };
    return set;
  });
}

const CLUSTER_SLOTS = 16384;

interface NodeView {
  port: number;
  role: 'master' | 'slave';
  masterPort: number | null;
  slots: string;
  healthy: boolean;
}

/** Parses CLUSTER NODES into a per-node summary keyed by client port. */
function parseClusterNodes(text: string): NodeView[] {
  const lines = text.trim().split('\n').map((l) => l.trim().split(' '));
  const portById = new Map<string, number>();
  for (const f of lines) portById.set(f[0]!, Number(/:(\d+)@/.exec(f[1] ?? '')?.[1]));
  return lines.map((f) => {
    const flags = f[2] ?? '';
    return {
      port: portById.get(f[0]!)!,
      role: flags.includes('master') ? 'master' : 'slave',
      masterPort: f[3] && f[3] !== '-' ? (portById.get(f[3]) ?? -1) : null,
      slots: f.slice(8).join(' '),
      healthy: !/fail|handshake|noaddr/.test(flags) && f[7] === 'connected',
    } satisfies NodeView;
  });
}

export async function startCluster(
  opts: { primaries?: number; replicasPerPrimary?: number; args?: string[] } = {},
): Promise<ClusterSet> {
  const nPrimaries = opts.primaries ?? 3;
  const perPrimary = opts.replicasPerPrimary ?? 0;
  const total = nPrimaries * (1 + perPrimary);
  // Redis >= 7 takes an explicit bus port; older ones use port + 10000, which
  // must exist (<= 65535) and be free.
  const explicitBus = redisVersion()[0] >= 7;
  const spec: ServerSpec = explicitBus
    ? {
        kind: 'redis',
        portCount: 2,
        args: ([p, bus], dir) =>
          baseArgs(p!, dir, [
            '--cluster-enabled', 'yes',
            '--cluster-port', String(bus),
            '--cluster-config-file', path.join(dir, `nodes-${p}.conf`),
            '--cluster-node-timeout', '2000',
            ...(opts.args ?? []),
          ]),
      }
    : {
        kind: 'redis',
        portCount: 1,
        acceptPort: (p) => p + 10000 <= 65535,
        args: ([p], dir) =>
          baseArgs(p!, dir, [
            '--cluster-enabled', 'yes',
            '--cluster-config-file', path.join(dir, `nodes-${p}.conf`),
            '--cluster-node-timeout', '2000',
            ...(opts.args ?? []),
          ]),
      };
  const nodes: ManagedServer[] = [];
  return cleanupOnError(() => nodes, async () => {
    nodes.push(...(await startMany(Array.from({ length: total }, () => spec))));
    const primaries = nodes.slice(0, nPrimaries);
    const replicas = nodes.slice(nPrimaries);
    const busPort = (n: ManagedServer) => (explicitBus ? n.allPorts[1]! : n.port + 10000);

    // Distinct config epochs up front (as redis-cli does) avoid epoch-collision churn.
    await Promise.all(nodes.map((n, i) => n.command('CLUSTER', 'SET-CONFIG-EPOCH', i + 1)));

    // Split the slots evenly; ADDSLOTSRANGE is Redis 7+, ADDSLOTS otherwise.
    await Promise.all(
      primaries.map(async (n, i) => {
        const from = Math.floor((i * CLUSTER_SLOTS) / nPrimaries);
        const to = Math.floor(((i + 1) * CLUSTER_SLOTS) / nPrimaries) - 1;
        try {
          await n.command('CLUSTER', 'ADDSLOTSRANGE', from, to);
        } catch (e) {
          if (!/unknown (sub)?command|syntax|Unknown subcommand/i.test((e as Error).message)) throw e;
          const slots = Array.from({ length: to - from + 1 }, (_, k) => from + k);
          await n.command('CLUSTER', 'ADDSLOTS', ...slots);
        }
      }),
    );

    const first = nodes[0]!;
    await Promise.all(
      nodes.slice(1).map((n) =>
        explicitBus
          ? n.command('CLUSTER', 'MEET', HOST, first.port, busPort(first))
          : n.command('CLUSTER', 'MEET', HOST, first.port),
      ),
    );
    // CLUSTER REPLICATE needs the replica to already know its primary.
    await Promise.all(
      nodes.map((n) =>
        waitFor(`node ${n.port} to know all ${total} nodes`, 10_000, async () => {
          const view = parseClusterNodes(String(await n.command('CLUSTER', 'NODES')));
          return view.length === total && view.every((v) => v.healthy) ? true : undefined;
        }),
      ),
    );
    await Promise.all(
      replicas.map(async (r, i) => {
        const primary = primaries[i % nPrimaries]!;
        const id = String(await primary.command('CLUSTER', 'MYID'));
        await r.command('CLUSTER', 'REPLICATE', id);
      }),
    );

    const allOk = async () => {
      for (const n of nodes) {
        if (parseInfo(String(await n.command('CLUSTER', 'INFO'))).cluster_state !== 'ok') return undefined;
      }
      for (const r of replicas) {
        if ((await r.info('replication')).master_link_status !== 'up') return undefined;
      }
      return true;
    };
    await waitFor('cluster_state:ok on every node', 20_000, allOk, 100);

    if (replicas.length > 0) {
      // A fresh primary's replication offset stays 0 until its first PING to
      // replicas (repl-ping-replica-period, 10 s), and CLUSTER SLOTS hides
      // replicas at offset 0. A write+delete per primary moves the offset now
      // and leaves the keyspace empty.
      await Promise.all(primaries.map(async (n, i) => {
        const from = Math.floor((i * CLUSTER_SLOTS) / nPrimaries);
        const to = Math.floor(((i + 1) * CLUSTER_SLOTS) / nPrimaries) - 1;
        for (let k = 0; ; k++) {
          const key = `surelock:topology-warmup:${k}`;
          const slot = Number(await n.command('CLUSTER', 'KEYSLOT', key));
          if (slot < from || slot > to) continue;
          await n.command('SET', key, '1');
          await n.command('DEL', key);
          return;
        }
      }));
    }

    // Every node agrees on roles, primaries and slot ranges, and CLUSTER SLOTS
    // (what clients read) lists every replica.
    await waitFor('one agreed slot map on every node', 20_000, async () => {
      if (!(await allOk())) return undefined;
      for (const n of nodes) {
        const slots = (await n.command('CLUSTER', 'SLOTS')) as RespReply[][];
        if (slots.length !== nPrimaries || slots.some((range) => range.length !== 3 + perPrimary)) return undefined;
      }
      const views = await Promise.all(nodes.map(async (n) => parseClusterNodes(String(await n.command('CLUSTER', 'NODES')))));
      const sig = (v: NodeView[]) =>
        v.map((x) => `${x.port} ${x.role} ${x.masterPort ?? '-'} ${x.slots} ${x.healthy}`).sort().join('\n');
      const sigs = views.map(sig);
      const v0 = views[0]!;
      const complete =
        v0.length === total &&
        v0.every((x) => x.healthy) &&
        v0.filter((x) => x.role === 'master').length === nPrimaries &&
        v0.filter((x) => x.role === 'slave' && x.masterPort !== null && x.masterPort > 0).length === replicas.length;
      return complete && sigs.every((x) => x === sigs[0]) ? true : undefined;
    }, 100);

    return {
      nodes,
      primaries,
      replicas,
      startupNodes: () => nodes.map((n) => ({ host: n.host, port: n.port })),
      stop: async () => {
        await Promise.all(nodes.map((n) => n.stop()));
      },
    };
  });
}
