/** MemoryRedis as a connection: ordering, asynchronous replies, and every fault hook. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidArgumentError } from "../../src/index.js";
import { Gate, MemoryConnectionError, MemoryRedis, VirtualClock } from "../../src/testing/index.js";

const settle = (): Promise<void> => new VirtualClock().settle();

describe("MemoryRedis adapter", () => {
  it("replies on a later turn, never synchronously, and in the order commands were sent", async () => {
    const redis = new MemoryRedis();
    const order: string[] = [];
    const a = redis.command(["INCR", "n"]).then((v) => order.push(`a${String(v)}`));
    const b = redis.command(["INCR", "n"]).then((v) => order.push(`b${String(v)}`));
    assert.deepEqual(order, []);
    await Promise.all([a, b]);
    assert.deepEqual(order, ["a1", "b2"]);
  });

  it("rejects error replies with the server's message and returns nested errors as Error values", async () => {
    const redis = new MemoryRedis();
    await redis.command(["SET", "s", "x"]);
    await assert.rejects(redis.command(["HGET", "s", "f"]), { name: "ReplyError", message: /^WRONGTYPE/ });
    const reply = (await redis.eval("return {1, redis.pcall('HGET', KEYS[1], 'f')}", ["s"], [])) as unknown[];
    assert.equal(reply[0], 1);
    assert.ok(reply[1] instanceof Error && /^WRONGTYPE/.test(reply[1].message));
  });

  it("gate at execution: the command and the ones behind it wait until the gate opens", async () => {
    const redis = new MemoryRedis();
    const gate = new Gate();
    redis.intercept((call) => (call.name === "SET" ? { kind: "gate", gate, stage: "execution" } : undefined));
    const set = redis.command(["SET", "k", "1"]);
    const get = redis.command(["GET", "k"]);
    const arrived = await gate.reached;
    assert.deepEqual([arrived.name, arrived.args], ["SET", ["k", "1"]]);
    assert.equal(await redis.duplicate().command(["GET", "k"]), null, "not run yet");
    gate.open();
    assert.equal(await set, "OK");
    assert.equal(await get, "1");
  });

  it("gate at reply: the command has run, its reply (and later ones) wait", async () => {
    const redis = new MemoryRedis();
    const gate = new Gate();
    redis.intercept((call) => (call.name === "INCR" ? { kind: "gate", gate, stage: "reply" } : undefined));
    let settled = false;
    const incr = redis.command(["INCR", "n"]).then((v) => { settled = true; return v; });
    await gate.reached;
    assert.equal(await redis.duplicate().command(["GET", "n"]), "1", "it ran");
    await settle();
    assert.equal(settled, false);
    gate.open();
    assert.equal(await incr, 1);
  });

  it("drop-reply: the command ran, the caller gets a connection reset, or nothing at all", async () => {
    const redis = new MemoryRedis();
    redis.intercept(() => ({ kind: "drop-reply", then: "reset" }));
    await assert.rejects(redis.command(["INCR", "n"]), (e: unknown) => e instanceof MemoryConnectionError && e.code === "ECONNRESET");
    redis.intercept(() => ({ kind: "drop-reply", then: "hang" }));
    let settled = false;
    void redis.command(["INCR", "n"]).finally(() => { settled = true; });
    redis.intercept(undefined);
    assert.equal(await redis.command(["GET", "n"]), "2", "both ran; later replies still arrive");
    await settle();
    assert.equal(settled, false);
  });

  it("replay runs a command twice and hands over the second reply; fail runs nothing", async () => {
    const redis = new MemoryRedis();
    redis.intercept((call) => (call.name === "INCR" ? { kind: "replay" } : call.name === "DEL" ? { kind: "fail" } : undefined));
    assert.equal(await redis.command(["INCR", "n"]), 2);
    await assert.rejects(redis.command(["DEL", "n"]), MemoryConnectionError);
    redis.intercept(undefined);
    assert.equal(await redis.command(["GET", "n"]), "2");
  });

  it("the interceptor sees EVALSHA and EVAL with the script's SHA1", async () => {
    const redis = new MemoryRedis();
    const seen: (string | undefined)[] = [];
    redis.intercept((call) => { seen.push(call.sha); return undefined; });
    await redis.eval("return 1", [], []);
    await redis.evalsha("e0e1f9fabfc9d4800c877a703b823ac0578ff8db", [], []);
    assert.deepEqual(seen, ["e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"]);
  });

  it("a dropped subscriber loses what is published meanwhile, then resubscribes and reports the reconnect", async () => {
    const redis = new MemoryRedis();
    const sub = await redis.createSubscriber();
    const got: string[] = [];
    let reconnects = 0;
    sub.onMessage((_c, m) => got.push(m));
    sub.onReconnect(() => { reconnects++; });
    await sub.subscribe("c");
    const back = new Gate();
    redis.dropSubscribers(back);
    assert.equal(await redis.command(["PUBLISH", "c", "lost"]), 0);
    back.open();
    await settle();
    assert.equal(reconnects, 1);
    assert.equal(await redis.command(["PUBLISH", "c", "after"]), 1);
    await settle();
    assert.deepEqual(got, ["after"]);
  });

  it("loseNextMessage drops one matching message on its way to this adapter's subscribers", async () => {
    const redis = new MemoryRedis();
    const sub = await redis.createSubscriber();
    const got: string[] = [];
    sub.onMessage((_c, m) => got.push(m));
    await sub.subscribe("c");
    redis.loseNextMessage((_channel, message) => message === "2");
    for (const m of ["1", "2", "3", "2"]) await redis.command(["PUBLISH", "c", m]);
    await settle();
    assert.deepEqual(got, ["1", "3", "2"]);
  });
});

describe("VirtualClock", () => {
  it("fires timers in due order (ties in the order set) with now() at each one's instant, only when advanced", async () => {
    const clock = new VirtualClock(1_000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
    const cancelled = clock.setTimeout(() => fired.push("never"), 5);
    clock.clearTimeout(cancelled);
    await clock.advance(9);
    assert.deepEqual(fired, []);
    await clock.advance(11);
    assert.deepEqual(fired, ["a@1010", "b@1020", "c@1020"]);
    assert.equal(clock.now(), 1_020);
  });

  it("runs the microtasks and in-memory replies a timer starts before the next timer fires", async () => {
    const clock = new VirtualClock();
    const redis = new MemoryRedis({ clock });
    const log: string[] = [];
    clock.setTimeout(() => { void redis.command(["INCR", "n"]).then((v) => log.push(`reply ${String(v)}`)); }, 10);
    clock.setTimeout(() => log.push("second timer"), 10);
    await clock.advance(10);
    assert.deepEqual(log, ["reply 1", "second timer"]);
  });

  it("runUntilIdle follows timers that set timers, and stops one that re-arms forever", async () => {
    const clock = new VirtualClock();
    let n = 0;
    const tick = (): void => { if (++n < 5) clock.setTimeout(tick, 100); };
    clock.setTimeout(tick, 100);
    await clock.runUntilIdle();
    assert.equal(n, 5);
    assert.equal(clock.now(), 500);
    const forever = (): void => { clock.setTimeout(forever, 1); };
    forever();
    await assert.rejects(clock.runUntilIdle(50), /re-arms a timer forever/);
  });

  it("refuses a start that is not a finite number, and an advance() by a negative, NaN or infinite step, naming the argument", async () => {
    for (const startMs of [Number.NaN, Infinity, "0", { epochMs: 0 }]) {
      assert.throws(() => new VirtualClock(startMs as number), (error: unknown) =>
        error instanceof InvalidArgumentError && error.argument === "startMs" && Object.is(error.value, startMs));
    }
    const clock = new VirtualClock();
    for (const ms of [-1, Number.NaN, Infinity]) {
      await assert.rejects(clock.advance(ms), (error: unknown) =>
        error instanceof InvalidArgumentError && error.argument === "ms" && Object.is(error.value, ms));
    }
    assert.equal(clock.now(), 0);
  });
});
