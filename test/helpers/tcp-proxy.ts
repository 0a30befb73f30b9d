// A TCP proxy on 127.0.0.1 that can partition a client from its server, in the
// spirit of etcd's test bridge. The mode is global and applies to new and
// existing connections alike:
//   pass      - forward bytes, FINs and RSTs both ways.
//   blackhole - accept and hold connections, silently discard everything in
//               both directions (no FIN, no RST): a network partition.
//   paused    - accept and buffer everything; pass()/resume() delivers it in order.
// On top of pass mode, per direction: a delay (each chunk is held that long, in
// order), and one-shot faults armed for the next request that contains a given
// text (a script's SHA, a key): see `loseReplyTo` and `seen`.
// Bytes dropped in blackhole mode are gone: a protocol stream that lost half a
// request stays corrupt after pass(), exactly as it would on a real network.
import net from 'node:net';
import { assertSlowTier } from './tier.js';

export type ProxyMode = 'pass' | 'blackhole' | 'paused';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  readonly target: { host: string; port: number };
  mode(): ProxyMode;
  pass(): void;
  blackhole(): void;
  pause(): void;
  /** Same as pass(): flushes what pause() buffered. */
  resume(): void;
  /** RST every current connection (client and upstream side). */
  dropAll(): void;
  /** Client connections currently open through the proxy (not closed by their client). */
  connectionCount(): number;
  /**
   * Holds every chunk going `dir` ('up' client->server, 'down' server->client) for `ms`
   * (0: none), in order. Applies to new and existing connections.
   */
  delay(dir: 'up' | 'down', ms: number): void;
  /**
   * Resolves when the next request containing `text` has been forwarded to the server
   * (a way to wait until a command is on the wire, without a sleep).
   */
  seen(text: string): Promise<void>;
  /**
   * Arms a lost reply: the next request containing `text` is forwarded and runs; the server's
   * next reply on that connection is discarded and the client's connection is reset (the server
   * side is closed gracefully after it). Resolves once the reply was lost. One-shot.
   */
  loseReplyTo(text: string): Promise<void>;
  /**
   * While on, connections opened from now on are blackholed (accepted, then silent both ways)
   * whatever the mode; existing ones are untouched. A partition of a client's new connection
   * (a duplicated subscriber, a reconnect) while its established one still works.
   */
  blackholeNew(on: boolean): void;
  close(): Promise<void>;
}

// A queued event for one direction: bytes, a half-close, or an abortive close.
type Item = Buffer | 'end' | 'reset';

interface Link {
  client: net.Socket;
  upstream: net.Socket;
  /** Buffered while paused: 'up' = client->server, 'down' = server->client. */
  queued: { up: Item[]; down: Item[] };
  /** A FIN/RST swallowed by blackhole, replayed by pass() like a retransmitted FIN. */
  lostClose: { up?: 'end' | 'reset'; down?: 'end' | 'reset' };
  /** A request matched `loseReplyTo`: its reply (the next bytes down) is lost with the connection. */
  loseNextReply?: () => void;
  /** Opened while blackholeNew() was on: silent for its whole life. */
  silent?: boolean;
  /** The client closed or reset its side (it may still be held open here, in a partition). */
  clientGone?: boolean;
}

interface Watch {
  readonly text: string;
  readonly done: () => void;
  readonly loseReply: boolean;
}

function reset(s: net.Socket): void {
  if (s.destroyed) return;
  try {
    // RST instead of FIN so the peer sees ECONNRESET, as after a crash. Not
    // once end() was called: with a shutdown in flight uv_tcp_close_reset fails
    // and Node 20 never closes the handle, so the process spins at exit.
    if (typeof s.resetAndDestroy === 'function' && !s.writableEnded) s.resetAndDestroy();
    else s.destroy();
  } catch {
    s.destroy();
  }
}

export async function startProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  assertSlowTier('a TCP proxy');
  let current: ProxyMode = 'pass';
  const links = new Set<Link>();
  const delays = { up: 0, down: 0 };
  let watches: Watch[] = [];
  let silenceNew = false;

  const apply = (dst: net.Socket, src: net.Socket, item: Item) => {
    if (dst.destroyed) return;
    if (item === 'end') dst.end();
    else if (item === 'reset') reset(dst);
    else if (!dst.write(item)) {
      // Backpressure: stop reading the source until the destination drains.
      src.pause();
      dst.once('drain', () => src.resume());
    }
  };

  const deliver = (link: Link, dir: 'up' | 'down', item: Item) => {
    if (link.silent) return;
    if (current === 'blackhole') {
      if (item === 'reset' || (item === 'end' && !link.lostClose[dir])) link.lostClose[dir] = item;
      return;
    }
    if (current === 'paused') {
      link.queued[dir].push(item);
      return;
    }
    if (dir === 'down' && link.loseNextReply && Buffer.isBuffer(item)) {
      const lost = link.loseNextReply;
      link.loseNextReply = undefined;
      reset(link.client);
      link.upstream.end();
      lost();
      return;
    }
    const forward = () => {
      if (dir === 'up') apply(link.upstream, link.client, item);
      else apply(link.client, link.upstream, item);
      if (dir === 'up' && Buffer.isBuffer(item)) matched(link, item);
    };
    // Timers of equal delay fire in the order they were set: the stream keeps its order.
    if (delays[dir] > 0) setTimeout(forward, delays[dir]);
    else forward();
  };

  const matched = (link: Link, chunk: Buffer) => {
    if (watches.length === 0) return;
    const text = chunk.toString('latin1');
    const hits = watches.filter((w) => text.includes(w.text));
    if (hits.length === 0) return;
    watches = watches.filter((w) => !hits.includes(w));
    for (const w of hits) {
      if (w.loseReply) link.loseNextReply = w.done;
      else w.done();
    }
  };

  const forget = (link: Link) => {
    if (link.client.destroyed && link.upstream.destroyed) links.delete(link);
  };

  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const link: Link = { client, upstream, queued: { up: [], down: [] }, lostClose: {}, silent: silenceNew };
    links.add(link);

    client.on('data', (c: Buffer) => deliver(link, 'up', c));
    client.on('end', () => { link.clientGone = true; deliver(link, 'up', 'end'); });
    client.on('error', () => { link.clientGone = true; deliver(link, 'up', 'reset'); });
    client.on('close', () => { link.clientGone = true; forget(link); });

    upstream.on('data', (c: Buffer) => deliver(link, 'down', c));
    upstream.on('end', () => deliver(link, 'down', 'end'));
    // Also covers ECONNREFUSED when the server is down: the client sees a reset
    // in pass mode, and keeps hanging in blackhole mode.
    upstream.on('error', () => deliver(link, 'down', 'reset'));
    upstream.on('close', () => forget(link));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;

  const pass = () => {
    current = 'pass';
    for (const link of [...links]) {
      const { up, down } = link.queued;
      link.queued = { up: [], down: [] };
      const lost = link.lostClose;
      link.lostClose = {};
      for (const item of up) apply(link.upstream, link.client, item);
      for (const item of down) apply(link.client, link.upstream, item);
      // Partition healed: a close that happened meanwhile reaches the peer now.
      if (lost.up) apply(link.upstream, link.client, lost.up);
      if (lost.down) apply(link.client, link.upstream, lost.down);
    }
  };

  return {
    host: '127.0.0.1',
    port,
    target: { ...target },
    mode: () => current,
    pass,
    resume: pass,
    blackhole: () => {
      current = 'blackhole';
      // Anything buffered by pause() is lost in the partition.
      for (const link of links) {
        // Buffered bytes are lost in the partition, but not a buffered close.
        for (const dir of ['up', 'down'] as const) {
          for (const item of link.queued[dir]) {
            if (item === 'reset' || (item === 'end' && !link.lostClose[dir])) link.lostClose[dir] = item;
          }
        }
        link.queued = { up: [], down: [] };
      }
    },
    pause: () => {
      current = 'paused';
    },
    dropAll: () => {
      for (const link of links) {
        link.queued = { up: [], down: [] };
        reset(link.client);
        reset(link.upstream);
      }
      links.clear();
    },
    connectionCount: () => [...links].filter((l) => !l.client.destroyed && !l.clientGone).length,
    delay: (dir, ms) => {
      delays[dir] = ms;
    },
    blackholeNew: (on) => {
      silenceNew = on;
    },
    seen: (text) => new Promise<void>((done) => { watches.push({ text, done, loseReply: false }); }),
    loseReplyTo: (text) => new Promise<void>((done) => { watches.push({ text, done, loseReply: true }); }),
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      links.clear();
      await closed;
    },
  };
}
