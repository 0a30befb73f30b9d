import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, afterEach, before, describe, it } from "node:test";
import net from "node:net";
import { Redis, type RedisOptions } from "ioredis";
import { eventually, quietFor, within } from "./fixtures.js";
import { startStandalone, type RedisServer } from "./redis-topology.js";
import { RespFrames, commandArgs, encodeCommand, frameEnd } from "./resp-frames.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";
import { FAULT_CLASSES, ScriptCatalog, namesOf } from "./script-catalog.js";

const BUMP = "return redis.call('INCR', KEYS[1])";
const bump = { name: "bump", sha: createHash("sha1").update(BUMP).digest("hex"), lua: BUMP };

describe("RESP framing", () => {
  it("cuts a stream into whole values however the bytes arrive", () => {
    const stream = Buffer.concat([
      encodeCommand(["SET", "k", "v\r\nwith crlf"]),
      Buffer.from("+OK\r\n$-1\r\n*2\r\n:1\r\n*1\r\n$3\r\nabc\r\n%1\r\n+a\r\n:2\r\n"),
    ]);
    for (const step of [1, 3, 7, stream.length]) {
      const frames = new RespFrames();
      const out: Buffer[] = [];
      for (let i = 0; i < stream.length; i += step) out.push(...frames.push(stream.subarray(i, i + step)));
      assert.equal(out.length, 5, `chunks of ${step}`);
      assert.deepEqual(commandArgs(out[0] as Buffer), ["SET", "k", "v\r\nwith crlf"]);
      assert.equal(frames.pending.length, 0);
    }
    assert.equal(frameEnd(Buffer.from("$5\r\nab"), 0), -1, "an incomplete bulk string is not a frame");
  });

  it("names scripts by SHA and by body, and keeps classes for old and new script names", () => {
    const catalog = new ScriptCatalog([bump]);
    assert.deepEqual(catalog.describe(encodeCommand(["EVALSHA", bump.sha.toUpperCase(), 1, "x"])),
      { command: "EVALSHA", script: "bump", key: "x" });
    assert.equal(catalog.describe(encodeCommand(["EVAL", BUMP, 1, "x"])).script, "bump");
    assert.equal(catalog.describe(encodeCommand(["EVAL", "return 1", 0])).script, undefined);
    const real = new ScriptCatalog();
    for (const name of real.names) {
      const classes = Object.entries(FAULT_CLASSES).filter(([, names]) => (names as readonly string[]).includes(name));
      assert.equal(classes.length, 1, `script ${name} belongs to exactly one fault class`);
    }
    for (const name of ["keepalive", "check", "release", "acquire-shared"]) {
      assert.ok([...namesOf("acquire-like", "release-like", "renew-like", "check-like")].includes(name));
    }
  });
});

describe("fault proxy against a real redis-server", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  const clients: Redis[] = [];
  const client = (autoResend: boolean): Redis => {
    const c = new Redis({ host: proxy.host, port: proxy.port, autoResendUnfulfilledCommands: autoResend, retryStrategy: () => 20, maxRetriesPerRequest: 3 });
    c.on("error", () => {});
    clients.push(c);
    return c;
  };
  before(async () => {
    server = await startStandalone();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await proxy.close();
    await server.command("FLUSHALL");
  });
  after(() => server.stop());

  it("byte framing: seen() resolves once a request is on the wire; cutReply by text loses its reply after Redis ran it", async () => {
    proxy = await startFaultProxy(server);
    const redis = client(false);
    await redis.ping();
    const onWire = proxy.seen("seen-key");
    await within(2_000, redis.set("seen-key", "1"));
    await within(1_000, onWire);
    const cut = proxy.cutReply({ text: "cut-key" }, 5_000);
    const pending = redis.incr("cut-key");
    pending.catch(() => {});
    const event = await within(2_000, cut);
    assert.deepEqual(event, { proxy: "proxy", command: undefined, script: undefined, key: undefined });
    await eventually(async () => (await server.command("GET", "cut-key")) === "1", 2_000, "Redis ran the command whose reply is lost");
    // Without autoResendUnfulfilledCommands ioredis never settles a command whose reply was lost.
    await assert.rejects(within(300, pending), /did not finish/);
    assert.equal(await proxy.cutReply({ text: "never-sent" }, 50), null, "nothing matched in time");
  });

  it("byte framing: silenceNew() leaves an established connection working and a new one silent; RESP faults throw", async () => {
    proxy = await startFaultProxy(server);
    const redis = client(true);
    await redis.ping();
    proxy.silenceNew(true);
    const raw = net.connect({ host: proxy.host, port: proxy.port });
    const heard: Buffer[] = [];
    raw.on("data", (c: Buffer) => heard.push(c));
    raw.on("error", () => {});
    await within(2_000, new Promise<void>((r) => raw.once("connect", () => r())));
    raw.write(encodeCommand(["PING"]));
    assert.equal(await within(2_000, redis.ping()), "PONG", "the established connection passes");
    await quietFor(100);
    assert.deepEqual(heard, [], "the new connection hears nothing");
    raw.destroy();
    proxy.silenceNew(false);
    assert.throws(() => proxy.holdPushes(), /needs framing "resp"/);
    assert.throws(() => proxy.stall(0), /needs framing "resp"/);
    assert.throws(() => proxy.cutReply({ scripts: new Set(["bump"]) }), /needs framing "resp"/);
  });

  it("cut after forward: Redis runs the command once, the reply is lost, ioredis resends it and it runs twice", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp", catalog: new ScriptCatalog([bump]) });
    const redis = client(true);
    assert.equal(await redis.call("SCRIPT", "LOAD", BUMP), bump.sha);
    const cut = proxy.cutReply({ scripts: new Set(["bump"]) }, 5_000);
    const reply = await within(5_000, redis.evalsha(bump.sha, 1, "n"));
    const event = await cut;
    assert.equal(event?.script, "bump");
    assert.equal(event?.key, "n");
    // The script ran before the cut and again when resent: the replay is what surelock must survive.
    assert.equal(await server.command("GET", "n"), "2");
    assert.equal(reply, 2);
  });

  it("cut after forward without resend: the command ran once and ioredis never settles the call", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const redis = client(false);
    await redis.ping();
    const cut = proxy.cutReply({ scripts: new Set(), commands: new Set(["INCR"]) }, 5_000);
    // ioredis drops unfulfilled commands without rejecting them: only a deadline of the caller's
    // own (surelock's commandTimeout) ends such a call.
    await assert.rejects(within(500, redis.incr("m")), /did not finish/);
    assert.equal((await cut)?.command, "INCR");
    assert.equal(await server.command("GET", "m"), "1");
    assert.equal(await within(5_000, redis.incr("m")), 2, "the client reconnects");
  });

  it("an EVAL of a script is cut by the script's name too; other commands pass untouched", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp", catalog: new ScriptCatalog([bump]) });
    const redis = client(false);
    await redis.ping();
    const cut = proxy.cutReply({ scripts: new Set(["bump"]) }, 5_000);
    assert.equal(await redis.incr("other"), 1, "not a match");
    await assert.rejects(within(500, redis.eval(BUMP, 1, "e")), /did not finish/);
    assert.equal((await cut)?.command, "EVAL");
    assert.equal(await server.command("GET", "e"), "1");
  });

  it("subscriber connections are never cut", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const sub = client(true);
    await sub.subscribe("ch");
    const cut = proxy.cutReply({ scripts: new Set(), commands: new Set(["SUBSCRIBE", "PING"]) }, 200);
    const message = new Promise<string>((resolve) => sub.once("message", (_c: string, m: string) => resolve(m)));
    await sub.subscribe("ch2");
    await server.command("PUBLISH", "ch2", "hello");
    assert.equal(await within(2_000, message), "hello");
    assert.equal(await cut, null);
  });

  it("latency delays each direction; a blackhole holds commands and a heal delivers them in order", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const redis = client(true);
    await redis.ping();
    proxy.setLatency(30, 20);
    const started = performance.now();
    await redis.ping();
    assert.ok(performance.now() - started >= 49, "one round trip costs both latencies");
    proxy.setLatency(0, 0);
    proxy.blackhole();
    const first = redis.incr("b");
    const second = redis.incr("b");
    await quietFor(100); // nothing may get through a blackhole
    assert.equal(await server.command("GET", "b"), null);
    proxy.heal("deliver");
    assert.deepEqual(await within(2_000, Promise.all([first, second])), [1, 2]);
  });

  it("a heal by reset loses what the blackhole held", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const redis = client(false);
    await redis.ping();
    proxy.blackhole();
    const held = redis.incr("r");
    await quietFor(50);
    proxy.heal("reset");
    await assert.rejects(within(500, held), /did not finish/);
    assert.equal(await server.command("GET", "r"), null);
  });

  it("held pushes reach a subscriber only when released, in order, or never when lost; commands pass meanwhile", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const sub = client(true);
    const redis = client(true);
    await sub.subscribe("w");
    const heard: string[] = [];
    sub.on("message", (_c: string, m: string) => heard.push(m));
    proxy.holdPushes();
    await server.command("PUBLISH", "w", "one");
    await server.command("PUBLISH", "w", "two");
    assert.equal(await within(2_000, redis.incr("during")), 1, "commands are not held");
    await eventually(() => (proxy?.heldPushes() ?? 0) >= 1, 2_000);
    assert.deepEqual(heard, []);
    proxy.releasePushes("deliver");
    await eventually(() => heard.length === 2, 2_000);
    assert.deepEqual(heard, ["one", "two"]);
    proxy.holdPushes();
    await server.command("PUBLISH", "w", "lost");
    await eventually(() => (proxy?.heldPushes() ?? 0) >= 1, 2_000);
    proxy.releasePushes("lose");
    await server.command("PUBLISH", "w", "after");
    await eventually(() => heard.length === 3, 2_000);
    assert.deepEqual(heard, ["one", "two", "after"]);
  });

  it("losing held pushes loses the messages only: a subscription confirmed meanwhile still completes", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const sub = client(true);
    await sub.subscribe("w");
    const heard: string[] = [];
    sub.on("message", (_c: string, m: string) => heard.push(m));
    proxy.holdPushes();
    await server.command("PUBLISH", "w", "lost");
    const second = sub.subscribe("v");
    await eventually(() => (proxy?.heldPushes() ?? 0) >= 2, 2_000);
    proxy.releasePushes("lose");
    assert.equal(await within(2_000, second), 2, "the confirmation of SUBSCRIBE v was delivered");
    await server.command("PUBLISH", "v", "after");
    await eventually(() => heard.length === 1, 2_000);
    assert.deepEqual(heard, ["after"]);
  });

  it("a stall holds what one command connection sends while another passes, then delivers it in order", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const one = client(true);
    await one.ping();
    const other = client(true);
    await other.ping();
    // The stall picks a connection by index; find which one it took by trying both.
    assert.notEqual(proxy.stall(0), null);
    const a = one.incr("s1");
    const b = other.incr("s2");
    const first = await Promise.race([a.then(() => "one"), b.then(() => "other")]);
    const stalled = first === "one" ? other : one;
    const key = first === "one" ? "s2" : "s1";
    const later = stalled.incr(key);
    await quietFor(50);
    assert.equal(await server.command("GET", key), null, "nothing of the stalled connection reached Redis");
    proxy.unstall();
    const results = await within(2_000, Promise.all([a, b, later]));
    assert.deepEqual(results.slice().sort(), [1, 1, 2]);
    assert.equal(await server.command("GET", key), "2");
  });
  it("stallSender stalls the connection that last sent a text, and onMessage reports each message as it arrives", async () => {
    proxy = await startFaultProxy(server, { name: "p", framing: "resp" });
    const one = client(true);
    const other = client(true);
    const sub = client(true);
    await sub.subscribe("w");
    await one.set("ticket-a", "1");
    await other.set("ticket-b", "1");
    const payloads: string[] = [];
    const stop = proxy.onMessage((p, channel) => payloads.push(`${channel}: ${p}`));
    proxy.holdPushes();
    await server.command("PUBLISH", "w", "g ticket-b 7 900");
    await eventually(() => payloads.length === 1, 2_000);
    assert.deepEqual(payloads, ["w: g ticket-b 7 900"], "heard while held");
    stop();
    assert.notEqual(proxy.stallSender("ticket-b"), null);
    assert.equal(await within(2_000, one.incr("passes")), 1, "the other connection passes");
    const held = other.incr("held");
    await quietFor(50);
    assert.equal(await server.command("GET", "held"), null, "the sender of ticket-b is stalled");
    assert.equal(proxy.stallSender("ticket-a"), null, "one stall at a time");
    proxy.unstall();
    assert.equal(await within(2_000, held), 1);
    proxy.releasePushes("deliver");
  });
});

/** A raw TCP client that exposes received bytes and lifecycle as promises. */
function rawClient(port: number) {
  const socket = net.connect({ host: "127.0.0.1", port });
  let received = "";
  let closed = false;
  const waiters: Array<() => void> = [];
  socket.on("data", (c: Buffer) => {
    received += c.toString();
    for (const w of waiters.splice(0)) w();
  });
  socket.on("close", () => (closed = true));
  const ended = new Promise<string>((resolve) => {
    socket.on("end", () => resolve("end"));
    socket.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    socket.on("close", () => resolve("close"));
  });
  return {
    socket,
    connected: new Promise<void>((r) => socket.once("connect", () => r())),
    ended,
    /** Bytes received and not yet consumed by receive(), and whether the socket closed. */
    state: () => ({ received, closed }),
    /** Resolves once the received text contains `text`, then consumes it. */
    receive(text: string): Promise<void> {
      return new Promise((resolve) => {
        const check = () => {
          const i = received.indexOf(text);
          if (i === -1) return void waiters.push(check);
          received = received.slice(i + text.length);
          resolve();
        };
        check();
      });
    },
  };
}

const PING = "*1\r\n$4\r\nPING\r\n";

describe("fault proxy, byte framing", () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  const clients: Redis[] = [];
  const ioredis = (extra: RedisOptions = {}) => {
    const c = new Redis({
      host: "127.0.0.1",
      port: proxy.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      commandTimeout: 300,
      retryStrategy: () => 50,
      ...extra,
    });
    c.on("error", () => {}); // expected ECONNRESETs are asserted via events
    clients.push(c);
    return c;
  };

  before(async () => {
    server = await startStandalone();
    proxy = await startFaultProxy(server);
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await proxy?.close();
    await server?.stop();
  });

  it("pass forwards traffic both ways", async () => {
    assert.equal(proxy.blackholed, false);
    const c = ioredis();
    await c.connect();
    assert.equal(await c.set("through-proxy", "1"), "OK");
    assert.equal(await server.command("GET", "through-proxy"), "1");
    assert.equal(proxy.connectionCount(), 1);
    c.disconnect();
    await eventually(() => proxy.connectionCount() === 0, 2000, "connection count to drop");
  });

  it('blackhole holds connections silently; heal("drop") heals them, the held bytes lost', async () => {
    const raw = rawClient(proxy.port);
    await within(2000, raw.connected, "connect");
    raw.socket.write(PING);
    await within(2000, raw.receive("+PONG\r\n"), "PONG in pass mode");

    proxy.blackhole();
    assert.equal(proxy.blackholed, true);
    raw.socket.write(PING);
    // Nothing comes back and the connection is neither closed nor reset.
    await quietFor(300);
    assert.deepEqual(raw.state(), { received: "", closed: false });

    // New connections are still accepted and held; commands just time out.
    // No ready check: its INFO would never be answered.
    const c = ioredis({ enableReadyCheck: false });
    await within(2000, c.connect(), "ioredis connect while blackholed");
    assert.equal(proxy.connectionCount(), 2);
    await assert.rejects(c.ping(), /timed out|Command timed out/);

    proxy.heal("drop");
    raw.socket.write(PING);
    await within(2000, raw.receive("+PONG\r\n"), "PONG after healing");
    raw.socket.destroy();
    c.disconnect();
  });

  it('blackhole holds and heal("deliver") flushes', async () => {
    const raw = rawClient(proxy.port);
    await within(2000, raw.connected, "connect");
    proxy.blackhole();
    raw.socket.write(PING);
    await quietFor(200);
    assert.deepEqual(raw.state(), { received: "", closed: false });
    proxy.heal("deliver");
    assert.equal(proxy.blackholed, false);
    await within(2000, raw.receive("+PONG\r\n"), "buffered PING answered");
    raw.socket.destroy();
  });

  it("resetAll resets every connection and clients can reconnect", async () => {
    const raw = rawClient(proxy.port);
    const c = ioredis();
    await c.connect();
    await within(2000, raw.connected, "raw connect");
    await eventually(() => proxy.connectionCount() === 2, 2000, "both connections registered");

    const closed = new Promise<void>((r) => c.once("close", () => r()));
    proxy.resetAll();
    assert.equal(await within(2000, raw.ended, "raw socket reset"), "ECONNRESET");
    await within(2000, closed, "ioredis close event");

    await within(5000, new Promise<void>((r) => c.once("ready", () => r())), "ioredis reconnect");
    assert.equal(await c.ping(), "PONG");
    c.disconnect();
  });
});
