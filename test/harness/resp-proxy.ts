/**
 * A RESP-aware TCP proxy on 127.0.0.1 for fault injection, one per Redis server. It cuts both
 * directions into whole commands and replies, so it can:
 *   - delay each direction by its own latency (order kept, as on one TCP connection);
 *   - blackhole: hold everything in both directions, then heal by delivering it late (a
 *     partition TCP rode out) or by resetting the connections (one it did not);
 *   - reset every connection (RST both ways);
 *   - cut after forwarding: pass one chosen command to Redis, wait for its reply, swallow that
 *     reply and reset the client. Redis ran the command and the client never hears of it; with
 *     ioredis `autoResendUnfulfilledCommands` it runs again after the reconnect.
 *   - hold the pushes of subscriber connections (wake-up messages), then deliver them late or lose
 *     them, while commands pass: a waiter that hears of its grant late, or never;
 *   - stall one command connection: hold what its client sends (a refresh, a renewal) while every
 *     other connection passes, then deliver it late.
 * Commands are chosen by script NAME (see script-catalog.ts), never by SHA, so a fault plan works
 * on any version of the scripts. Subscriber connections are never cut (replies there are pushes).
 */
import net from "node:net";
import { RespFrames } from "./resp-frames.js";
import { ScriptCatalog, type CommandInfo } from "./script-catalog.js";

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Which commands a cut may pick: script names, or plain command names (upper case). */
export interface CutRule {
  readonly scripts: ReadonlySet<string>;
  readonly commands?: ReadonlySet<string>;
}

/** What a cut did, for the history. */
export interface CutEvent {
  readonly proxy: string;
  readonly command: string;
  readonly script: string | undefined;
  readonly key: string | undefined;
}

export type HealMode = "deliver" | "reset";

export interface RespProxy extends HostPort {
  readonly name: string;
  readonly target: HostPort;
  /** Per-direction latency in ms: `up` client to server, `down` server to client. */
  setLatency(upMs: number, downMs: number): void;
  latency(): { up: number; down: number };
  blackhole(): void;
  readonly blackholed: boolean;
  /** Ends a blackhole: deliver what was held, or reset every connection (held bytes are lost). */
  heal(mode: HealMode): void;
  /** RST every current connection, both sides. */
  resetAll(): void;
  /** From now on, what Redis pushes to subscriber connections is held (commands still pass). */
  holdPushes(): void;
  /** Ends holdPushes(): deliver what was held (in order, then the rest as usual), or lose it. */
  releasePushes(mode: "deliver" | "lose"): void;
  /** Pushes held now (whole chunks, not messages: for a test to wait until one is there). */
  heldPushes(): number;
  /**
   * Holds what the client of one command connection sends (the `pick`-th of those open, modulo
   * their number) until unstall(); other connections pass. Names the connection, or null if none.
   */
  stall(pick: number): string | null;
  /** Delivers what the stalled connection sent meanwhile, and lets it pass again. */
  unstall(): void;
  /**
   * Stalls the command connection that most recently sent `text` (a waiter's ticket id, which
   * its acquire and refreshes carry), as stall() does; names it, or null if none did (among the
   * last few commands of each connection) or a stall is under way.
   */
  stallSender(text: string): string | null;
  /**
   * Calls `listener` with each pub/sub message a subscriber connection receives (as it reaches
   * the proxy, held or not): the payload's text and the channel. Returns the function that stops it.
   */
  onMessage(listener: (payload: string, channel: string) => void): () => void;
  /**
   * Arms a one-shot cut: the next command matching `rule` on a non-subscriber connection is
   * forwarded, its reply swallowed and the client reset. Resolves with what was cut, or null if
   * nothing matched within `withinMs` (or the proxy closed).
   */
  armCut(rule: CutRule, withinMs: number): Promise<CutEvent | null>;
  /** Client connections open now. */
  connectionCount(): number;
  close(): Promise<void>;
}

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
  readonly #blackholed: () => boolean;
  #timer: NodeJS.Timeout | undefined;
  #lastAt = 0;

  constructor(dst: net.Socket, delayMs: () => number, blackholed: () => boolean) {
    this.#dst = dst;
    this.#delayMs = delayMs;
    this.#blackholed = blackholed;
  }

  push(item: Item): void {
    if (this.#blackholed()) {
      this.#held.push(item);
      return;
    }
    // FIFO even when the latency drops: never before the item ahead of it.
    const at = Math.max(performance.now() + this.#delayMs(), this.#lastAt);
    this.#lastAt = at;
    this.#queue.push({ at, item });
    this.#pump();
  }

  /** Blackhole lifted: what was held goes first, then the queue as it was. */
  release(): void {
    const held = this.#held.splice(0);
    const queued = this.#queue.splice(0);
    this.#lastAt = 0;
    for (const item of held) this.push(item);
    for (const q of queued) this.push(q.item);
  }

  /** Items held now. */
  get heldCount(): number {
    return this.#held.length;
  }

  /** What was held is lost (all of it, or what `lost` picks); the queue goes on. */
  discardHeld(lost: (item: Item) => boolean = () => true): void {
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
      if (this.#blackholed()) {
        // Items caught in flight by a blackhole are held with the rest.
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
      deliver(this.#dst, head.item);
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

function deliver(dst: net.Socket, item: Item): void {
  if (typeof item === "function") return item();
  if (dst.destroyed) return;
  if (item === "end") dst.end();
  else if (item === "reset") reset(dst);
  else dst.write(item);
}

function reset(s: net.Socket): void {
  if (s.destroyed) return;
  try {
    // RST, as after a crash. Not once end() was called (Node cannot reset a socket mid-shutdown).
    if (!s.writableEnded) s.resetAndDestroy();
    else s.destroy();
  } catch {
    s.destroy();
  }
}

interface Armed {
  readonly rule: CutRule;
  readonly done: (event: CutEvent | null) => void;
  readonly timer: NodeJS.Timeout;
}

class Link {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  readonly up: Lane;
  readonly down: Lane;
  readonly #requests = new RespFrames();
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
  /** The command number whose reply is swallowed; later commands are never forwarded. */
  #cutAt = 0;
  readonly #proxy: ProxyCore;

  constructor(client: net.Socket, upstream: net.Socket, proxy: ProxyCore) {
    this.client = client;
    this.upstream = upstream;
    this.#proxy = proxy;
    this.up = new Lane(upstream, () => proxy.upMs, () => proxy.blackholed || proxy.stalled === this);
    this.down = new Lane(client, () => proxy.downMs, () => proxy.blackholed || (this.#opaque && proxy.pushesHeld));
  }

  /** The last commands sent (latin1 text), newest last: to find the connection a ticket is refreshed on. */
  readonly recent: { readonly seq: number; readonly text: string }[] = [];

  /** A subscriber connection (or one the proxy could not parse). */
  get opaque(): boolean {
    return this.#opaque;
  }

  fromClient(chunk: Buffer): void {
    if (this.#opaque) return this.up.push(chunk);
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
      this.recent.push({ seq: this.#proxy.sent++, text: frame.toString("latin1") });
      if (this.recent.length > RECENT_COMMANDS) this.recent.shift();
      this.#forwarded++;
      this.up.push(frame);
      if (SUBSCRIBING.has(info.command)) {
        this.#opaque = true;
        continue;
      }
      if (this.#proxy.takeCut(info)) this.#cutAt = this.#forwarded;
    }
  }

  fromServer(chunk: Buffer): void {
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
      if (this.#cutAt > 0 && this.#replied === this.#cutAt) {
        // Redis ran it; the reply is lost with the connection.
        this.down.push(() => {
          reset(this.client);
          reset(this.upstream);
        });
        return;
      }
      if (this.#cutAt > 0 && this.#replied > this.#cutAt) return;
      this.down.push(frame);
    }
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

/** The state the links share. */
class ProxyCore {
  readonly catalog: ScriptCatalog;
  readonly name: string;
  upMs = 0;
  downMs = 0;
  blackholed = false;
  pushesHeld = false;
  stalled: Link | undefined;
  readonly links = new Set<Link>();
  readonly messageListeners = new Set<(payload: string, channel: string) => void>();
  /** Commands forwarded on every link so far (orders Link.recent across links). */
  sent = 0;

  /** A pub/sub message reached a subscriber link: its payload (the last bulk string) to the listeners. */
  heard(frame: Buffer): void {
    if (this.messageListeners.size === 0) return;
    // ["message" | "smessage", channel, payload]: header, then length and text of each.
    const parts = frame.toString("latin1").split("\r\n");
    const channel = parts[4] ?? "";
    const payload = parts[6] ?? "";
    for (const l of [...this.messageListeners]) l(payload, channel);
  }
  readonly #armed: Armed[] = [];

  constructor(name: string, catalog: ScriptCatalog) {
    this.name = name;
    this.catalog = catalog;
  }

  arm(rule: CutRule, withinMs: number): Promise<CutEvent | null> {
    return new Promise((resolve) => {
      const entry: Armed = {
        rule,
        done: (event) => {
          clearTimeout(entry.timer);
          const i = this.#armed.indexOf(entry);
          if (i !== -1) this.#armed.splice(i, 1);
          resolve(event);
        },
        timer: setTimeout(() => entry.done(null), withinMs),
      };
      this.#armed.push(entry);
    });
  }

  /** Whether this command is to be cut (consumes the arm that matched). */
  takeCut(info: CommandInfo): boolean {
    const armed = this.#armed.find((a) =>
      (info.script !== undefined && a.rule.scripts.has(info.script)) || (a.rule.commands?.has(info.command) ?? false));
    if (!armed) return false;
    armed.done({ proxy: this.name, command: info.command, script: info.script, key: info.key });
    return true;
  }

  disarmAll(): void {
    for (const a of [...this.#armed]) a.done(null);
  }
}

export async function startRespProxy(target: HostPort, name: string, catalog = new ScriptCatalog()): Promise<RespProxy> {
  const core = new ProxyCore(name, catalog);
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const link = new Link(client, upstream, core);
    core.links.add(link);
    const forget = (): void => {
      if (client.destroyed && upstream.destroyed) core.links.delete(link);
    };
    client.on("data", (c: Buffer) => link.fromClient(c));
    client.on("end", () => link.up.push("end"));
    client.on("error", () => link.up.push("reset"));
    client.on("close", () => {
      // The client is gone: whatever is still queued for it goes nowhere; tell the server.
      if (!upstream.destroyed) link.up.push("end");
      forget();
    });
    upstream.on("data", (c: Buffer) => link.fromServer(c));
    upstream.on("end", () => link.down.push("end"));
    // Also ECONNREFUSED while the server is down: the client sees a reset, as without a proxy.
    upstream.on("error", () => link.down.push("reset"));
    upstream.on("close", forget);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;

  return {
    name,
    host: "127.0.0.1",
    port,
    target: { host: target.host, port: target.port },
    setLatency(upMs, downMs) {
      core.upMs = Math.max(0, upMs);
      core.downMs = Math.max(0, downMs);
    },
    latency: () => ({ up: core.upMs, down: core.downMs }),
    blackhole() {
      core.blackholed = true;
    },
    get blackholed() {
      return core.blackholed;
    },
    heal(mode) {
      if (!core.blackholed) return;
      core.blackholed = false;
      if (mode === "reset") {
        for (const link of [...core.links]) link.resetBoth();
        core.links.clear();
        return;
      }
      for (const link of core.links) {
        link.up.release();
        link.down.release();
      }
    },
    resetAll() {
      for (const link of [...core.links]) link.resetBoth();
      core.links.clear();
    },
    holdPushes() {
      core.pushesHeld = true;
    },
    releasePushes(mode) {
      core.pushesHeld = false;
      for (const link of core.links) {
        if (!link.opaque) continue;
        if (mode === "lose") link.down.discardHeld(isMessage);
        link.down.release();
      }
    },
    stall(pick) {
      const open = [...core.links].filter((l) => !l.opaque && !l.client.destroyed);
      const link = open[Math.abs(pick) % Math.max(1, open.length)];
      if (!link || core.stalled) return null;
      core.stalled = link;
      return `${link.client.remotePort ?? "?"}`;
    },
    stallSender(text) {
      if (core.stalled) return null;
      // Of the connections that sent it, the one whose last such command is newest.
      let link: Link | undefined;
      let newest = -1;
      for (const l of core.links) {
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
      core.stalled = link;
      return `${link.client.remotePort ?? "?"}`;
    },
    onMessage(listener) {
      core.messageListeners.add(listener);
      return () => core.messageListeners.delete(listener);
    },
    unstall() {
      const link = core.stalled;
      core.stalled = undefined;
      link?.up.release();
    },
    heldPushes: () => [...core.links].reduce((n, l) => n + (l.opaque ? l.down.heldCount : 0), 0),
    armCut: (rule, withinMs) => core.arm(rule, withinMs),
    connectionCount: () => [...core.links].filter((l) => !l.client.destroyed).length,
    async close() {
      core.disarmAll();
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const link of core.links) link.resetBoth();
      core.links.clear();
      await closed;
    },
  };
}

