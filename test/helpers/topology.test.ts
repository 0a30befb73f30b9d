// Tests of the test helpers themselves, against real redis-server processes.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import {
  parentDeathSignalSupported,
  startCluster,
  startPrimaries,
  startSentinelSet,
  startStandalone,
  stopAll,
  type RedisServer,
} from './redis-topology.js';
import { within } from "./fixtures.js";

after(stopAll);


/** Resolves true if `p` settles within `ms`: used only to prove something did NOT happen. */
async function settlesWithin(ms: number, p: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const settled = p.then(() => true as const, () => true as const);
  const r = await Promise.race([settled, timeout]);
  clearTimeout(timer);
  return r;
}

/** Only to prove that something did NOT happen within a window. */

/** Polls until `check` is truthy; for state that has no event to wait on. */
async function eventually(ms: number, what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // retry until the deadline
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Dead, or a zombie nobody reaped yet (PID 1 in a container may not reap). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
  } catch {
    return true;
  }
}

void describe('standalone server', () => {
  let server: RedisServer | undefined;
  after(() => server?.stop());

  void it('starts on a free loopback port, answers PING and stops by pid', async () => {
    server = await startStandalone();
    assert.notEqual(server.port, 6379);
    assert.equal(server.url, `redis://127.0.0.1:${server.port}`);
    assert.equal(await server.command('PING'), 'PONG');
    assert.equal(Number((await server.info('server')).process_id), server.pid);
    // Raw client parses arrays and errors.
    assert.deepEqual(await server.command('CONFIG', 'GET', 'appendonly'), ['appendonly', 'no']);
    await assert.rejects(server.command('NOSUCHCOMMAND'), /ERR unknown command/);
    // DEBUG is enabled for local clients (tests use DEBUG SLEEP).
    assert.equal(await server.command('DEBUG', 'SLEEP', 0), 'OK');

    const { pid, dir } = server;
    assert.ok(existsSync(dir));
    await server.stop();
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    assert.equal(existsSync(dir), false);
    await server.stop(); // idempotent
  });

  void it('restart() comes back on the same port after kill()', async () => {
    server = await startStandalone();
    const { port, pid } = server;
    await server.command('SET', 'k', 'v');
    await server.kill();
    assert.ok(isGone(pid));
    await assert.rejects(server.commandWithTimeout(1000, 'PING'), /ECONNREFUSED/);
    await server.restart();
    assert.equal(server.port, port);
    assert.notEqual(server.pid, pid);
    assert.equal(await server.command('PING'), 'PONG');
    assert.equal(await server.command('GET', 'k'), null, 'no persistence: data is gone');
    await server.stop();
  });

  void it('pause() stops answering and resume() answers the queued PING', async () => {
    server = await startStandalone();
    await server.pause();
    await assert.rejects(server.commandWithTimeout(300, 'PING'), /timed out/);
    const pending = server.commandWithTimeout(5000, 'PING');
    assert.equal(await settlesWithin(200, pending), false, 'a paused server must not answer');
    await server.resume();
    assert.equal(await pending, 'PONG');
    await server.stop();
  });

  // Runs a helper user in a separate process that dies without calling stop().
  async function orphanTest(killParent: boolean): Promise<void> {
    const helper = fileURLToPath(new URL('./redis-topology.ts', import.meta.url));
    const code = `
      const t = await import(${JSON.stringify(helper)});
      const s = await t.startStandalone();
      console.log('PID ' + s.pid + ' DIR ' + s.dir);
      // Stay alive until the parent has seen the server running.
      process.stdin.once('data', () => { ${killParent ? '' : "throw new Error('simulated test crash');"} });
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', code], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    let out = '';
    const [pid, dir] = await within(15_000, new Promise<[number, string]>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /PID (\d+) DIR (\S+)\n/.exec(out);
        if (m) resolve([Number(m[1]), m[2]!]);
      });
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      void exited.then(() => reject(new Error(`child exited early:\n${out}`)));
    }), 'child to report its server');
    try {
      assert.equal(isGone(pid), false);
      if (killParent) child.kill('SIGKILL');
      else child.stdin.write('crash\n');
      await within(10_000, exited, 'child to exit');
      await eventually(5000, `redis-server pid ${pid} to die with its parent`, () => isGone(pid));
      // A crash still runs 'exit' hooks, which remove the dir; SIGKILL does not.
      if (!killParent) assert.equal(existsSync(dir), false);
    } finally {
      if (!isGone(pid)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }

  void it('servers die when the test process crashes without stopping them', () => orphanTest(false));

  void it('servers die when the test process is SIGKILLed', { skip: !parentDeathSignalSupported() && 'setpriv --pdeathsig unavailable' }, () =>
    orphanTest(true));
});

void describe('startPrimaries', () => {
  let primaries: RedisServer[] = [];
  after(() => Promise.all(primaries.map((p) => p.stop())));

  void it('starts 3 independent primaries', async () => {
    primaries = await startPrimaries(3);
    assert.equal(new Set(primaries.map((p) => p.port)).size, 3);
    assert.equal(new Set(primaries.map((p) => p.pid)).size, 3);
    for (const p of primaries) {
      assert.equal((await p.info('replication')).role, 'master');
    }
    await primaries[0]!.command('SET', 'only-on-first', '1');
    assert.equal(await primaries[1]!.command('GET', 'only-on-first'), null);
  });
});

void describe('sentinel set', () => {
  let set: Awaited<ReturnType<typeof startSentinelSet>> | undefined;
  let sub: Redis | undefined;
  after(async () => {
    sub?.disconnect();
    await set?.stop();
  });

  void it('reaches a stable state and fails over when the primary is killed', async () => {
    set = await startSentinelSet({ replicas: 1, sentinels: 3 });
    const { primary, replicas, sentinels, masterName } = set;
    assert.equal(masterName, 'mymaster');
    assert.equal(set.sentinelAddresses().length, 3);
    assert.deepEqual(await set.currentPrimary(), { host: '127.0.0.1', port: primary.port });
    for (const s of sentinels) {
      assert.equal(((await s.command('SENTINEL', 'REPLICAS', masterName)) as unknown[]).length, 1);
      assert.equal(((await s.command('SENTINEL', 'SENTINELS', masterName)) as unknown[]).length, 2);
    }
    const replica = replicas[0]!;

    sub = new Redis({ host: '127.0.0.1', port: sentinels[0]!.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    await sub.connect();
    const switched = new Promise<string>((resolve) => sub!.on('message', (ch: string, msg: string) => ch === '+switch-master' && resolve(msg)));
    await sub.subscribe('+switch-master');

    await primary.kill();
    const msg = await within(30_000, switched, '+switch-master');
    // "<name> <old-ip> <old-port> <new-ip> <new-port>"
    assert.deepEqual(msg.split(' '), [masterName, '127.0.0.1', String(primary.port), '127.0.0.1', String(replica.port)]);
    await eventually(5000, 'replica to report role:master', async () => (await replica.info('replication')).role === 'master');
    await eventually(5000, 'sentinels to agree on the new primary', async () => (await set!.currentPrimary()).port === replica.port);
  });

  void it('a node restarted after a failover keeps the role Sentinel gave it (its redis.conf, rewritten)', async () => {
    assert.ok(set, 'the set of the test above');
    const { primary, replicas } = set;
    const promoted = replicas[0]!;
    // As a process manager would restart it: the promoted replica comes back a primary, not as a
    // replica of the node it replaced (which would replicate from it: no primary at all).
    await promoted.restart();
    assert.equal((await promoted.info('replication')).role, 'master');
    // The old primary comes back from its own config as a primary; Sentinel turns it into a replica
    // and rewrites its config, so a second restart keeps it one.
    await primary.restart();
    await eventually(20_000, 'the old primary to be made a replica', async () => (await primary.info('replication')).role === 'slave');
    await primary.restart();
    assert.equal((await primary.info('replication')).role, 'slave');
    await eventually(10_000, 'sentinels to keep the promoted primary', async () => (await set!.currentPrimary()).port === promoted.port);
  });
});

void describe('cluster', () => {
  let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
  let client: Cluster | undefined;
  after(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  void it('forms a 3-primary cluster that serves SET/GET through ioredis', async () => {
    cluster = await startCluster({ primaries: 3 });
    assert.equal(cluster.nodes.length, 3);
    assert.equal(cluster.primaries.length, 3);
    for (const n of cluster.nodes) {
      assert.match(String(await n.command('CLUSTER', 'INFO')), /cluster_state:ok/);
    }
    client = new Cluster(cluster.startupNodes(), { redisOptions: { maxRetriesPerRequest: 0 } });
    // Keys spread over the three slot ranges.
    const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`);
    for (const k of keys) assert.equal(await client.set(k, k.toUpperCase()), 'OK');
    for (const k of keys) assert.equal(await client.get(k), k.toUpperCase());
    const counts = await Promise.all(cluster.primaries.map(async (p) => Number(await p.command('DBSIZE'))));
    assert.ok(counts.every((c) => c > 0), `keys on every primary: ${counts.join(',')}`);
  });
});
