/**
 * MemoryRedis against a real redis-server: seeded random command sequences, Lua snippets that
 * cross the Redis-Lua bridge (conversions both ways, redis.call/pcall, errors, cjson, numbers), and
 * every script in src/scripts over generated arguments; replies and keyspace must agree (see
 * support/differential.ts for how time is made comparable, and what of a reply is compared). A
 * disagreement is a MemoryRedis bug.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { LUA } from "../../src/scripts/lua.generated.js";
import { Differential, SHORT_LIFE_MS } from "./support/differential.js";
import { Random, randomCommand } from "./support/generators.js";
import { bytes, RespClient, type Wire } from "./support/resp-client.js";

const SEED = Number(process.env.MEMORY_REDIS_SEED ?? 20261123);

/** Snippets whose answers depend on how Redis and Lua meet, not on the Lua language itself. */
const BRIDGE = [
  "return 1 + 2", "return 7 / 2", "return -7 / 2", "return 3.99", "return -3.99", "return 2^63", "return -2^63 - 4096", "return 0/0",
  "return tostring(7 / 2)", "return tostring(1732000000123456)", "return tostring(2^53)", "return tostring(10 / 2)",
  "return tonumber('1732000000123456')", "return {tonumber('0x10'), tonumber(' 12 '), tonumber('1e2'), tonumber('9223372036854775807')}",
  "return string.format('%d|%s|%s|%5.2f|%x', 3.7, 1.5, 10, 2.345, 255)", "return string.format('%d', 1732000000123456)",
  "return string.format('%d', tonumber('1732000000123456') + 1)", "return tostring(tonumber('9007199254740993'))",
  "return true", "return false", "return nil", "return {1, 2, {3, 'x'}, nil, 4}", "return {1, false, 3}", "return {a = 1}",
  "return {ok = 'FINE'}", "return {err = 'BAD thing'}", "return redis.error_reply('my err')", "return redis.error_reply('-CODE text')",
  "return {redis.error_reply('inner')}", "return redis.status_reply('PONG')", "return {redis.status_reply('A'), 'b'}",
  "local ok, err = pcall(redis.call, 'INCR') return {tostring(ok), err}",
  "redis.call('SET', 'bridge:w', 'v') local ok, err = pcall(function() return redis.call('HGET', 'bridge:w', 'x') end) return err",
  "local ok, err = pcall(error, {err = 'E as table'}) return err", "local ok, err = pcall(error, {code = 7}) return {tostring(ok), type(err), err.code}",
  "return redis.pcall('SUBSCRIBE', 'x')", "return redis.pcall('HGET', 'bridge:w', 'x')",
  "return x", "x = 1", "error('boom')", "local a = 1\nerror('on two')", "local function f()\n  error('deep', 2)\nend\nf()",
  "error({err = 'CUSTOM failure'})", "error('no position', 0)", "error(redis.error_reply('RAISED it'))",
  "return redis.call('INCR')", "return redis.call('SET', 'k', {})", "return redis.call()", "return redis.call('SET', 'k', true)",
  "x = ", "return 'open",
  "return redis.call('SET', 'bridge:s', 'v')", "redis.call('SET', 'bridge:n', 10) return redis.call('INCRBY', 'bridge:n', 5)",
  "redis.call('SET', 'bridge:n', 10) return redis.call('INCRBY', 'bridge:n', 2.0)", "return redis.call('INCRBY', 'bridge:n', 0.5)",
  "redis.call('DEL', 'bridge:h') redis.call('HSET', 'bridge:h', 'a', 1, 'b', 2.5) return redis.call('HMGET', 'bridge:h', 'a', 'zz', 'b')",
  "return type(redis.call('GET', 'bridge:none'))", "return redis.call('SET', 'bridge:f', 0.1) and redis.call('GET', 'bridge:f')",
  "return redis.call('SET', 'bridge:f', 1e20) and redis.call('GET', 'bridge:f')", "return redis.call('SET', 'bridge:f', 1732000000123456) and redis.call('GET', 'bridge:f')",
  "return redis.call('TYPE', 'bridge:s').ok", "return redis.call('TYPE', 'bridge:s')", "return redis.sha1hex('')", "return redis.sha1hex(12)",
  "local t = redis.call('TIME') return type(tonumber(t[1]) * 1000000 + tonumber(t[2]))",
  "return cjson.encode({1, 2, 'a/b', {x = 1}})", "return cjson.encode({}) .. cjson.encode(1732000000123456) .. cjson.encode({[1] = 1, [3] = 3})",
  "return cjson.encode({holds = {'a', 'b'}, n = 3, t = true, z = cjson.null})", "return cjson.encode('tab\\tquote\"nl\\n')",
  // Not in a tail call: Lua 5.4 drops the caller's frame of a tail-called Lua function, and with it the position.
  "local s = cjson.encode({[1] = 1, [20] = 3}) return s", "local v = cjson.decode('[1,') return v", "return cjson.encode({1.5, -0.25, 1e300})",
  "local v = cjson.decode('{\"a\":[1,{\"b\":null}],\"c\":\"\\\\u00e9\"}') return {v.a[1], tostring(v.a[2].b), v.c}",
  "local v = cjson.decode('[1, 2.5, \"x\", true]') return {v[1], tostring(v[2]), v[3], v[4]}",
  "return {KEYS[1] == nil, #ARGV}", "return {unpack({1, 2, 3})}", "return #'caf\u00e9'",
];

describe("MemoryRedis agrees with redis-server", () => {
  let d: Differential;
  before(async () => {
    d = await Differential.start();
    await d.listen("ch");
  });
  after(async () => {
    await d.stop();
  });
  after(() => {
    console.log(`# differential: ${d.steps} steps compared; widest t0..t1 window ${(d.widestStepUs / 1000).toFixed(2)} ms`);
  });

  it("tells a reply or a keyspace that differs, even when it reruns the step inside its window", async () => {
    await d.reset();
    // Written behind the doubles' back: the real server now answers, and holds, what they do not.
    const aside = await RespClient.connect(d.server.port);
    try {
      await aside.send(["SET", "planted", "v"]);
      await assert.rejects(d.step(["GET", "planted"]), /reply differs for \["GET","planted"\]/);
      await d.step(["GET", "planted"]); // each step starts from the real keyspace again
      await aside.send(["HSET", "planted:h", "f", "1"]);
      await assert.rejects(d.step(["PING"]), /key "planted:h" differs/);
    } finally {
      aside.close();
    }
  });

  it("on Lua snippets that cross the bridge between Redis and Lua", async () => {
    for (const source of BRIDGE) await d.step(["EVAL", bytes(source), "0"], "bridge");
  });

  it(`on seeded random command sequences (seed ${SEED})`, async () => {
    await d.reset();
    const r = new Random(SEED);
    for (let i = 0; i < 1500; i++) {
      if (i % 300 === 0) await d.step(["FLUSHALL"]);
      await d.step(randomCommand(r), `command #${i} (seed ${SEED})`);
    }
  });

  it(`on every script in src/scripts, over generated arguments (seed ${SEED + 2})`, async () => {
    const scripts = Object.values(LUA);
    assert.ok(scripts.length > 0, "no scripts in src/scripts");
    await d.reset();
    await d.step(["SCRIPT", "FLUSH"]);
    const r = new Random(SEED + 2);
    const answered = new Map<string, number>();
    for (const script of scripts) {
      await d.step(["SCRIPT", "LOAD", script.lua], script.name);
      for (let i = 0; i < 120; i++) {
        if (i % 40 === 0) await d.step(["FLUSHALL"]);
        const { keys, args } = callOf(script, r);
        const how = r.chance(0.5) ? ["EVALSHA", script.sha] : ["EVAL", script.lua];
        const { real } = await d.step([...how, String(keys.length), ...keys, ...args], `${script.name} call #${i} (seed ${SEED + 2})`);
        if (!isError(real)) answered.set(script.name, (answered.get(script.name) ?? 0) + 1);
      }
      await d.step(["SCRIPT", "FLUSH"]);
      await d.step(["EVALSHA", script.sha, "0"], script.name);
    }
    console.log(`# scripts answered without an error: ${scripts.map((s) => `${s.name} ${answered.get(s.name) ?? 0}`).join(", ")}`);
    // Every script ran past its argument checks often enough to reach its state changes.
    assert.deepEqual(scripts.filter((s) => (answered.get(s.name) ?? 0) < 10).map((s) => s.name), []);
  });
});

const isError = (w: Wire): boolean => w !== null && typeof w === "object" && "error" in w;

/** Argument values by what the header calls them; anything else draws from all of them. */
const ARG_POOLS: [RegExp, readonly string[]][] = [
  [/^(owner|writer)$/, ["o1", "o2"]],
  [/^(hold|entry|ticket|id)$/, ["h1", "h2", "h3"]],
  [/^join$/, ["", "", "*", "h1"]],
  [/^publish$/, ["PUBLISH", "SPUBLISH"]],
  [/^grant$/, ["1", "0", ""]],
  [/^mode$/, ["r", "w", "s"]],
  [/^kind$/, ["x", "s", "l", "e"]],
  [/^(permits|limit|count|n)$/, ["1", "2", "3", "0"]],
  [/^(token|seq|chosen)$/, ["1", "2", "1795442865974650", "1795442865974651"]],
  // Lives that end by the next call or two, or long after the test: an expiry inside one call's
  // window would make the outcome depend on the instant the real server ran it.
  [/^(ttl|keep|window|ticketLease|lease|timeout)$/, [String(SHORT_LIFE_MS), "3000", "3000", "86400000", "0"]],
  [/^(has|here)$/, ["1", "0"]],
  // A waiter's place in quorum mode's ordered line (wall-clock ms): equal ones fall back on ticket ids.
  [/^order$/, ["1795442865974", "1795442865975", "1795442865974"]],
  [/^(value)$/, ["v", "42"]],
];
const ANY = [...new Set(ARG_POOLS.flatMap(([, pool]) => pool))];
const argFor = (name: string, r: Random): string => r.pick(ARG_POOLS.find(([re]) => re.test(name))?.[1] ?? ANY);
const KEY_NAMES = ["lock", "queue", "tickets", "channel", "released"];

/**
 * One call of `script` with arguments drawn by their names: named KEYS in one hash tag; a list of
 * locks (`...locks`) as (lock, queue, tickets, channel, released) groups; keepalive's items and the
 * guard's commands in their own grammar; other rest lists from every pool.
 */
function callOf(script: (typeof LUA)[keyof typeof LUA], r: Random): { keys: string[]; args: string[] } {
  const tag = r.pick(["{k}", "{k}", "{j}"]);
  const keys = script.keys.map((k) => `surelock:${tag}:${k}`);
  const args = script.args.map((a) => argFor(a, r));
  if (script.restKeys && script.name.endsWith("-multi")) {
    for (const lock of r.some(["a", "b", "c"], 1, 3)) keys.push(...KEY_NAMES.map((k) => `surelock:{k}:${lock}:${k}`));
  } else if (script.name === "keepalive") {
    for (let i = r.int(1, 3); i > 0; i--) {
      const item = r.pick(["x", "s", "q", "Q", "o"]);
      const hold = argFor("hold", r);
      const base = `surelock:{k}:${r.pick(["a", "b"])}`;
      if (item === "x") { args.push("x", hold, argFor("ttl", r)); keys.push(`${base}:lock`); }
      if (item === "s") { args.push("s", hold, argFor("ttl", r)); keys.push(...["state", "holders", "entries"].map((k) => `${base}:${k}`)); }
      if (item === "q" || item === "o") { args.push(item, hold, argFor("ttl", r), argFor("ttl", r), argFor("owner", r)); keys.push(...["lock", "queue", "tickets", "released"].map((k) => `${base}:${k}`)); }
      if (item === "Q") {
        args.push("Q", hold, argFor("ttl", r), argFor("ttl", r), argFor("owner", r), argFor("mode", r), argFor("permits", r));
        keys.push(...["state", "holders", "entries", "queue", "tickets"].map((k) => `${base}:${k}`));
      }
    }
  } else if (script.name === "guard-write") {
    args.push(...r.pick([["x"], ["x", "1"], ["f", "v"], ["5"]]));
    args[5] = r.pick(["SET", "HSET", "INCRBY", "RPUSH", "DEL", "SADD", "ZADD", "XADD", "GET"]);
    if (args[5] === "ZADD") args.splice(6, args.length, "1", "m");
    if (args[5] === "XADD") args.splice(6, args.length, "*", "f", "v");
    if (args[5] === "HSET") args.splice(6, args.length, "f", "v");
  } else if (script.name === "acquire") {
    // The optional order: quorum mode's ordered line, or the back of the line without it.
    if (r.pick([true, false])) args.push(argFor("order", r));
  } else if (script.restArgs || script.restKeys) {
    args.push(...r.some(ANY, 0, 4));
    if (script.restKeys) keys.push(...r.some(KEY_NAMES, 0, 4).map((k) => `surelock:${tag}:${k}`));
  }
  return { keys, args };
}
