/**
 * The one TCP fault proxy of the tests, on 127.0.0.1, one per server. Every connection is two
 * lanes (client to server "up", server to client "down") that deliver in order, each item no
 * earlier than its due time. Faults are options and methods of the same class, at two levels:
 *
 * Bytes (any protocol: Redis, PostgreSQL, etcd's gRPC):
 *   - latency per direction (order kept, as on one TCP connection);
 *   - blackhole: hold everything both ways, no FIN, no RST; heal by delivering it late (a
 *     partition TCP rode out), by losing the held bytes (closes still arrive), or by resetting;
 *   - reset every connection (RST both ways, as after a crash);
 *   - silence the connections opened from now on (a client's new connection partitioned while
 *     its established one still works);
 *   - wait until a request containing a text is on the wire (`seen`);
 *   - lose the reply to a matching request after the server ran it (`cutReply`).
 * RESP (`framing: "resp"`: the streams are cut into whole commands and replies):
 *   - `cutReply` picks a command by script NAME (script-catalog.ts, never by SHA, so a fault plan
 *     works on any version of the scripts) or command name, and loses exactly its reply; nothing
 *     after it on that connection reaches Redis;
 *   - hold the pushes of subscriber connections (wake-up messages), then deliver or lose them;
 *     listen to them (`onMessage`);
 *   - stall one command connection (hold what its client sends) while every other passes.
 * With byte framing a "request" or "reply" is whatever chunk TCP handed over: a RESP fault on such
 * a proxy throws at once. Subscriber connections are never cut (their replies are pushes).
 */
import net from "node:net";
import { RespFrames } from "./resp-frames.js";
import { ScriptCatalog, type CommandInfo } from "./script-catalog.js";
import { assertSlowTier } from "./tier.js";

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface FaultProxyOptions {
  /** Names the proxy in cut events (a node of a deployment). Default: "proxy". */
  readonly name?: string;
  /** "bytes" (default): chunks as TCP delivers them. "resp": whole RESP commands and replies. */
  readonly framing?: "bytes" | "resp";
  /** Which scripts exist, for a cut by script name (resp framing). Default: the code under test's. */
  readonly catalog?: ScriptCatalog;
}

/**
 * Which request a cut or a watch picks. `text`: the first request containing it (a key, a SHA, a
 * SQL word). `scripts` / `commands`: script names, upper-case command names (resp framing only).
 * A request matches if any given part does.
 */
export interface Match {
  readonly text?: string;
  readonly scripts?: ReadonlySet<string>;
  readonly commands?: ReadonlySet<string>;
}

/** What a cut did. `command`, `script`, `key` are known with resp framing only. */
export interface CutEvent {
  readonly proxy: string;
  readonly command: string | undefined;
  readonly script: string | undefined;
  readonly key: string | undefined;
}

/** How a blackhole ends: held bytes delivered late, lost (closes still pass), or every connection reset. */
export type HealMode = "deliver" | "drop" | "reset";

type Item = Buffer | "end" | "reset" | (() => void);

const SUBSCRIBING = new Set(["SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE"]);
/** Commands each connection remembers for stallSender(). */
const RECENT_COMMANDS = 32;

/** One direction of one connection: delivers items in order, each no earlier than its due time. */
class Lane {
  readonly #queue: { at: number; item: Item }[] = [];
  readonly #held: Item[] = [];
  readonly #dst: net.Socket;
  readonly #delayMs: () => number;
  readonly #holding: () => boolean;
  readonly #silent: boolean;
  readonly #sent: ((chunk: Buffer) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastAt = 0;

  constructor(dst: net.Socket, delayMs: () => number, holding: () => boolean, silent: boolean, sent?: (chunk: Buffer) => void) {
    this.#dst = dst;
    this.#delayMs = delayMs;
    this.#holding = holding;
    this.#silent = silent;
    this.#sent = sent;
  }

  push(item: Item): void {
    if (this.#silent) return;
    if (this.#holding()) {
      this.#held.push(item);
      return;
    }
    // FIFO even when the latency drops: never before the item ahead of it.
    const at = Math.max(performance.now() + this.#delayMs(), this.#lastAt);
    this.#lastAt = at;
    this.#queue.push({ at, item });
    this.#pump();
  }

  /** The hold lifted: what was held goes first, then the queue as it was. */
  release(): void {
    const held = this.#held.splice(0);
    const queued = this.#queue.splice(0);
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#lastAt = 0;
    for (const item of held) this.push(item);
    for (const q of queued) this.push(q.item);
  }

  /** Items held now. */
  get heldCount(): number {
    return this.#held.length;
  }

  /** What `lost` picks of the held items is lost; the rest stays held. */
  discardHeld(lost: (item: Item) => boolean): void {
    const kept = this.#held.filter((item) => !lost(item));
    this.#held.length = 0;
    this.#held.push(...kept);
  }

  drop(): void {
    this.#held.length = 0;
    this.#queue.length = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #pump(): void {
    if (this.#timer) return;
    while (this.#queue.length > 0) {
      if (this.#holding()) {
        // Items caught in flight by a hold are held with the rest.
        this.#held.push(...this.#queue.splice(0).map((q) => q.item));
        return;
      }
      const head = this.#queue[0] as { at: number; item: Item };
      const wait = head.at - performance.now();
      if (wait > 0.5) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#pump();
        }, wait);
        return;
      }
      this.#queue.shift();
      const item = head.item;
      if (typeof item === "function") item();
      else if (this.#dst.destroyed) continue;
      else if (item === "end") this.#dst.end();
      else if (item === "reset") reset(this.#dst);
      else {
        this.#dst.write(item);
        this.#sent?.(item);
      }
    }
  }
}

/** Pub/sub messages as a subscriber receives them (RESP2 arrays, RESP3 pushes): the wake-ups. */
const MESSAGE_HEADS = ["*3\r\n$7\r\nmessage\r\n", "*3\r\n$8\r\nsmessage\r\n", "*4\r\n$8\r\npmessage\r\n",
  ">3\r\n$7\r\nmessage\r\n", ">3\r\n$8\r\nsmessage\r\n", ">4\r\n$8\r\npmessage\r\n"];

/** Whether a held item is a whole wake-up message (a subscriber's replies are framed, see Link). */
function isMessage(item: Item): boolean {
  if (!Buffer.isBuffer(item)) return false;
  const head = item.toString("latin1", 0, 24);
  return MESSAGE_HEADS.some((h) => head.startsWith(h));
}

function reset(s: net.Socket): void {
  if (s.destroyed) return;
  try {
    // RST instead of FIN so the peer sees ECONNRESET, as after a crash. Not once end() was
    // called: with a shutdown in flight Node cannot reset the socket and never closes the handle.
    if (!s.writableEnded) s.resetAndDestroy();
    else s.destroy();
  } catch {
    s.destroy();
  }
}

/** An armed cut: which request, and who waits to hear it was picked. */
interface Cut {
  readonly match: Match;
  readonly done: (event: CutEvent | null) => void;
}

interface Watch {
  readonly text: string;
  readonly done: () => void;
}

class Link {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  readonly up: Lane;
  readonly down: Lane;
  /** The client closed or reset its side (it may still be held open here, in a partition). */
  clientGone = false;
  readonly #requests: RespFrames | undefined;
  readonly #replies = new RespFrames();
  /** Commands forwarded and replies seen: the n-th reply answers the n-th command. */
  #forwarded = 0;
  #replied = 0;
  /** A subscriber (replies are pushes), or a stream we could not parse: passed through, never cut. */
  #opaque = false;
  /**
   * A subscriber's replies are still cut into whole frames (until a frame cannot be parsed), so
   * losing held pushes loses whole wake-up messages and keeps the (un)subscribe confirmations the
   * client's command queue waits for: losing those, or half a frame, broke the connection itself.
   */
  #framedDown = true;
  /** Resp framing: the command number whose reply is lost; later commands are never forwarded. */
  #cutAt = 0;
  /** Byte framing: a cut request was forwarded, the next bytes from the server are its lost reply. */
  #loseNext = false;
  readonly #proxy: FaultProxy;

  constructor(client: net.Socket, upstream: net.Socket, proxy: FaultProxy, silent: boolean) {
    this.client = client;
    this.upstream = upstream;
    this.#proxy = proxy;
    this.#requests = proxy.framing === "resp" ? new RespFrames() : undefined;
    this.up = new Lane(upstream, () => proxy.latency().up, () => proxy.blackholed || proxy.stalledLink === this, silent,
      (chunk) => this.#sent(chunk));
    this.down = new Lane(client, () => proxy.latency().down, () => proxy.blackholed || (this.#opaque && proxy.pushesHeld), silent);
  }

  /** The last commands sent (latin1 text), newest last: to find the connection a ticket is refreshed on. */
  readonly recent: { readonly seq: number; readonly text: string }[] = [];

  /** A subscriber connection (or one the proxy could not parse). */
  get opaque(): boolean {
    return this.#opaque;
  }

  fromClient(chunk: Buffer): void {
    if (!this.#requests || this.#opaque) return this.up.push(chunk);
    let frames: Buffer[];
    try {
      frames = this.#requests.push(chunk);
    } catch {
      this.#goOpaque(this.#requests.pending, this.up);
      return;
    }
    for (const frame of frames) {
      if (this.#cutAt > 0) continue; // after a cut nothing more reaches Redis on this connection
      const info = this.#proxy.catalog.describe(frame);
      const text = frame.toString("latin1");
      this.recent.push({ seq: this.#proxy.nextSeq(), text });
      if (this.recent.length > RECENT_COMMANDS) this.recent.shift();
      this.#forwarded++;
      this.up.push(frame);
      if (SUBSCRIBING.has(info.command)) {
        this.#opaque = true;
        continue;
      }
      if (this.#proxy.takeCut(text, info)) this.#cutAt = this.#forwarded;
    }
  }

  fromServer(chunk: Buffer): void {
    if (!this.#requests) {
      if (this.#loseNext) return this.#loseReply();
      return this.down.push(chunk);
    }
    if (this.#opaque && !this.#framedDown) return this.down.push(chunk);
    let frames: Buffer[];
    try {
      frames = this.#replies.push(chunk);
    } catch {
      this.#framedDown = false;
      this.#goOpaque(this.#replies.pending, this.down);
      return;
    }
    if (this.#opaque) {
      for (const frame of frames) {
        if (isMessage(frame)) this.#proxy.heard(frame);
        this.down.push(frame);
      }
      return;
    }
    for (const frame of frames) {
      this.#replied++;
      if (this.#cutAt > 0 && this.#replied === this.#cutAt) return this.#loseReply();
      if (this.#cutAt > 0 && this.#replied > this.#cutAt) return;
      this.down.push(frame);
    }
  }

  /** The server ran the cut request and answered: the answer is lost with the connection. */
  #loseReply(): void {
    this.#loseNext = false;
    this.down.push(() => {
      reset(this.client);
      // Redis's side is reset too (nothing after the cut may reach it); a byte stream's server
      // side is closed gracefully, as a client that went away would.
      if (this.#requests) reset(this.upstream);
      else if (!this.upstream.destroyed) this.upstream.end();
    });
  }

  /** A request reached the server: watches, and (byte framing) a cut of its reply. */
  #sent(chunk: Buffer): void {
    const text = chunk.toString("latin1");
    this.#proxy.sawSent(text);
    if (!this.#requests && !this.#loseNext && this.#proxy.takeCut(text, undefined)) this.#loseNext = true;
  }

  #goOpaque(pending: Buffer, lane: Lane): void {
    this.#opaque = true;
    if (pending.length > 0) lane.push(Buffer.from(pending));
  }

  resetBoth(): void {
    this.up.drop();
    this.down.drop();
    reset(this.client);
    reset(this.upstream);
  }
}

/** Start one with `startFaultProxy(target, options)`. */
export class FaultProxy implements HostPort {
  readonly name: string;
  readonly host = "127.0.0.1";
  readonly port: number;
  readonly target: HostPort;
  readonly framing: "bytes" | "resp";
  /** @internal */ readonly catalog: ScriptCatalog;
  /** @internal */ pushesHeld = false;
  /** @internal */ stalledLink: Link | undefined;
  readonly #server: net.Server;
  readonly #links = new Set<Link>();
  readonly #messageListeners = new Set<(payload: string, channel: string) => void>();
  readonly #cuts: Cut[] = [];
  #watches: Watch[] = [];
  #upMs = 0;
  #downMs = 0;
  #blackholed = false;
  #silenceNew = false;
  /** Commands forwarded on every link so far (orders Link.recent across links). */
  #seq = 0;

  /** @internal */
  constructor(server: net.Server, port: number, target: HostPort, options: FaultProxyOptions) {
    this.#server = server;
    this.port = port;
    this.target = { host: target.host, port: target.port };
    this.name = options.name ?? "proxy";
    this.framing = options.framing ?? "bytes";
    this.catalog = options.catalog ?? new ScriptCatalog();
  }

  /** @internal A client connected: its link to the server. */
  accept(client: net.Socket): void {
    const upstream = net.connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const link = new Link(client, upstream, this, this.#silenceNew);
    this.#links.add(link);
    const forget = (): void => {
      if (!client.destroyed || !upstream.destroyed) return;
      this.#links.delete(link);
    };
    client.on("data", (c: Buffer) => link.fromClient(c));
    client.on("end", () => { link.clientGone = true; link.up.push("end"); });
    client.on("error", () => { link.clientGone = true; link.up.push("reset"); });
    client.on("close", () => {
      link.clientGone = true;
      // The client is gone: whatever is still queued for it goes nowhere; tell the server.
      if (!upstream.destroyed) link.up.push("end");
      forget();
    });
    upstream.on("data", (c: Buffer) => link.fromServer(c));
    upstream.on("end", () => link.down.push("end"));
    // Also ECONNREFUSED while the server is down: the client sees a reset, as without a proxy
    // (and keeps hanging while blackholed).
    upstream.on("error", () => link.down.push("reset"));
    upstream.on("close", forget);
  }

  // ---- byte level ----

  /** Per-direction latency in ms: `up` client to server, `down` server to client (0: none). */
  setLatency(upMs: number, downMs: number): void {
    this.#upMs = Math.max(0, upMs);
    this.#downMs = Math.max(0, downMs);
  }

  latency(): { up: number; down: number } {
    return { up: this.#upMs, down: this.#downMs };
  }

  /** Holds everything in both directions, on every connection, new ones too: a partition. */
  blackhole(): void {
    this.#blackholed = true;
  }

  get blackholed(): boolean {
    return this.#blackholed;
  }

  /**
   * Ends a blackhole. "deliver": what was held arrives late, in order. "drop": held bytes are
   * lost, a close that happened meanwhile still reaches the peer (a protocol stream that lost half
   * a request stays corrupt). "reset": every connection is reset (whether or not blackholed).
   */
  heal(mode: HealMode): void {
    const was = this.#blackholed;
    this.#blackholed = false;
    if (mode === "reset") return this.resetAll();
    if (!was) return;
    for (const link of this.#links) {
      if (mode === "drop") {
        link.up.discardHeld(Buffer.isBuffer);
        link.down.discardHeld(Buffer.isBuffer);
      }
      link.up.release();
      link.down.release();
    }
  }

  /** RST every current connection, both sides; what they held is lost. */
  resetAll(): void {
    for (const link of [...this.#links]) link.resetBoth();
    this.#links.clear();
  }

  /**
   * While on, connections opened from now on are silent both ways for their whole life (accepted,
   * never forwarded); existing ones are untouched.
   */
  silenceNew(on: boolean): void {
    this.#silenceNew = on;
  }

  /**
   * Resolves when the next request containing `text` has been forwarded to the server (a way to
   * wait until a command is on the wire, without a sleep).
   */
  seen(text: string): Promise<void> {
    return new Promise<void>((done) => { this.#watches.push({ text, done }); });
  }

  /**
   * Arms a one-shot cut: the next request that `match` picks is forwarded and runs; the server's
   * reply to it is lost and the client's connection reset. Resolves once the request was picked
   * (its reply is lost when it comes) with what was cut, or with null if nothing matched within
   * `withinMs` (default: no limit) or the proxy closed.
   */
  cutReply(match: Match, withinMs?: number): Promise<CutEvent | null> {
    if ((match.scripts || match.commands) && this.framing !== "resp") {
      throw new Error(`${this.name}: a cut by script or command name needs framing "resp"`);
    }
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const cut: Cut = {
        match,
        done: (event) => {
          clearTimeout(timer);
          const i = this.#cuts.indexOf(cut);
          if (i !== -1) this.#cuts.splice(i, 1);
          resolve(event);
        },
      };
      if (withinMs !== undefined) timer = setTimeout(() => cut.done(null), withinMs);
      this.#cuts.push(cut);
    });
  }

  /** Client connections open now (not closed by their client). */
  connectionCount(): number {
    return [...this.#links].filter((l) => !l.client.destroyed && !l.clientGone).length;
  }

  // ---- RESP level (framing "resp") ----

  /** From now on, what Redis pushes to subscriber connections is held (commands still pass). */
  holdPushes(): void {
    this.#needsResp("holdPushes");
    this.pushesHeld = true;
  }

  /** Ends holdPushes(): deliver what was held (in order, then the rest as usual), or lose it. */
  releasePushes(mode: "deliver" | "lose"): void {
    this.pushesHeld = false;
    for (const link of this.#links) {
      if (!link.opaque) continue;
      if (mode === "lose") link.down.discardHeld(isMessage);
      link.down.release();
    }
  }

  /** Pushes held now (whole frames: for a test to wait until one is there). */
  heldPushes(): number {
    return [...this.#links].reduce((n, l) => n + (l.opaque ? l.down.heldCount : 0), 0);
  }

  /**
   * Holds what the client of one command connection sends (the `pick`-th of those open, modulo
   * their number) until unstall(); other connections pass. Names the connection, or null if none.
   */
  stall(pick: number): string | null {
    this.#needsResp("stall");
    const open = [...this.#links].filter((l) => !l.opaque && !l.client.destroyed);
    const link = open[Math.abs(pick) % Math.max(1, open.length)];
    if (!link || this.stalledLink) return null;
    this.stalledLink = link;
    return `${link.client.remotePort ?? "?"}`;
  }

  /**
   * Stalls the command connection that most recently sent `text` (a waiter's ticket id, which
   * its acquire and refreshes carry), as stall() does; names it, or null if none did (among the
   * last few commands of each connection) or a stall is under way.
   */
  stallSender(text: string): string | null {
    this.#needsResp("stallSender");
    if (this.stalledLink) return null;
    // Of the connections that sent it, the one whose last such command is newest.
    let link: Link | undefined;
    let newest = -1;
    for (const l of this.#links) {
      if (l.opaque || l.client.destroyed) continue;
      for (let i = l.recent.length - 1; i >= 0; i--) {
        const sent = l.recent[i] as { seq: number; text: string };
        if (sent.seq <= newest) break;
        if (!sent.text.includes(text)) continue;
        link = l;
        newest = sent.seq;
        break;
      }
    }
    if (!link) return null;
    this.stalledLink = link;
    return `${link.client.remotePort ?? "?"}`;
  }

  /** Delivers what the stalled connection sent meanwhile, and lets it pass again. */
  unstall(): void {
    const link = this.stalledLink;
    this.stalledLink = undefined;
    link?.up.release();
  }

  /**
   * Calls `listener` with each pub/sub message a subscriber connection receives (as it reaches
   * the proxy, held or not): the payload's text and the channel. Returns the function that stops it.
   */
  onMessage(listener: (payload: string, channel: string) => void): () => void {
    this.#needsResp("onMessage");
    this.#messageListeners.add(listener);
    return () => this.#messageListeners.delete(listener);
  }

  async close(): Promise<void> {
    for (const c of [...this.#cuts]) c.done(null);
    const closed = new Promise<void>((r) => this.#server.close(() => r()));
    this.resetAll();
    await closed;
  }

  // ---- for the links ----

  /** @internal */
  nextSeq(): number {
    return this.#seq++;
  }

  /** @internal A request reached the server: the watches it satisfies. */
  sawSent(text: string): void {
    if (this.#watches.length === 0) return;
    const hits = this.#watches.filter((w) => text.includes(w.text));
    if (hits.length === 0) return;
    this.#watches = this.#watches.filter((w) => !hits.includes(w));
    for (const w of hits) w.done();
  }

  /** @internal Whether a cut picks this request (it is taken then: a cut is one-shot). */
  takeCut(text: string, info: CommandInfo | undefined): boolean {
    const cut = this.#cuts.find(({ match: m }) =>
      (m.text !== undefined && text.includes(m.text)) ||
      (info?.script !== undefined && (m.scripts?.has(info.script) ?? false)) ||
      (info !== undefined && (m.commands?.has(info.command) ?? false)));
    if (!cut) return false;
    cut.done({ proxy: this.name, command: info?.command, script: info?.script, key: info?.key });
    return true;
  }

  /** @internal A pub/sub message reached a subscriber link: its payload (the last bulk string) to the listeners. */
  heard(frame: Buffer): void {
    if (this.#messageListeners.size === 0) return;
    // ["message" | "smessage", channel, payload]: header, then length and text of each.
    const parts = frame.toString("latin1").split("\r\n");
    const channel = parts[4] ?? "";
    const payload = parts[6] ?? "";
    for (const l of [...this.#messageListeners]) l(payload, channel);
  }

  #needsResp(what: string): void {
    if (this.framing !== "resp") throw new Error(`${this.name}: ${what} needs framing "resp"`);
  }
}

/** Starts a proxy on 127.0.0.1 (an ephemeral port) in front of `target`. */
export async function startFaultProxy(target: HostPort, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  assertSlowTier("a fault proxy");
  const server = net.createServer({ allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port, target, options);
  server.on("connection", (client: net.Socket) => proxy.accept(client));
  return proxy;
}
