/**
 * The checklist of verifyAdapter: one function per promise of the RedisAdapter contract
 * (docs/adapters.md), each run against the live adapter. A check returns what it saw when it
 * passed, throws CheckFailed with every problem it found, or Skipped when it does not apply.
 * Every step has a deadline, so a call that never settles fails its check instead of hanging.
 */
import { createHash, randomBytes } from "node:crypto";
import diagnostics from "node:diagnostics_channel";
import type { RedisAdapter, RedisArg, RedisSubscriber } from "../adapters/types.js";
import { channels, ScriptError, Surelock, type Lease, type WaitMessage } from "../index.js";
import { errorReplyCode, isErrorReply, isNoScript, messageOf } from "./error-replies.js";

/** A check found the adapter wanting; `message` lists every problem. */
export class CheckFailed extends Error {}
/** A check that does not apply to this adapter (or could not be arranged); `message` says why. */
export class Skipped extends Error {}

/** What every check shares: the adapter, the deadline of one step, and the names it may use. */
export interface CheckContext {
  readonly adapter: RedisAdapter;
  readonly timeoutMs: number;
  /** The namespace of the run's keys and channels. */
  readonly namespace: string;
  /** Random, per run: every key is `<namespace>:{<run>}:<part>`, so one run's keys share a slot. */
  readonly run: string;
  readonly dropSubscribers: (() => void | Promise<void>) | false | undefined;
  readonly replicas: number;
  /** Keys the checks wrote (all with a PTTL), deleted at the end. */
  readonly written: Set<string>;
  /** The prefix the adapter puts on keys, once the key-prefix check saw it. */
  keyPrefix: string | undefined;
}

export type Check = (ctx: CheckContext) => Promise<string>;

/** A Lua script as the checks send it, with its SHA1 (what EVALSHA names it by). */
interface Lua {
  readonly source: string;
  readonly sha: string;
}

const lua = (source: string): Lua => ({ source, sha: createHash("sha1").update(source, "utf8").digest("hex") });

// Fixed texts, so that a run adds no new script to the server's cache beyond these (the NOSCRIPT
// check names a script that is never sent).
const SCRIPTS = {
  echoArgs: lua("-- surelock adapter kit: arguments\nlocal r = {#KEYS}\nfor _, a in ipairs(ARGV) do r[#r + 1] = a end\nreturn r"),
  keys: lua("-- surelock adapter kit: keys\nreturn KEYS"),
  replies: lua(
    "-- surelock adapter kit: reply shapes\n" +
      "return {tonumber(ARGV[1]), -2, 0, '42', ARGV[2], redis.status_reply('OK'), false, {1, {2, 'x'}, {}}, {1, false, 3}}",
  ),
  nil: lua("-- surelock adapter kit: nil\nreturn false"),
  status: lua("-- surelock adapter kit: status\nreturn redis.status_reply('OK')"),
  errorReply: lua("-- surelock adapter kit: error reply\nreturn redis.error_reply('SLCHECK an error reply the adapter kit asked for')"),
  wrongType: lua(
    "-- surelock adapter kit: a script that fails\nredis.call('SET', KEYS[1], 'x', 'PX', ARGV[1])\nreturn redis.call('HGET', KEYS[1], 'f')",
  ),
  write: lua(
    "-- surelock adapter kit: write\nredis.call('HSET', KEYS[1], 'f', ARGV[1])\nredis.call('PEXPIRE', KEYS[1], ARGV[2])\nreturn KEYS[1]",
  ),
  echo: lua("-- surelock adapter kit: echo\nreturn ARGV[1]"),
  publish: lua("-- surelock adapter kit: publish\nreturn redis.call(ARGV[1], KEYS[1], ARGV[2])"),
  clean: lua("-- surelock adapter kit: clean up\nreturn redis.call('DEL', unpack(KEYS))"),
} as const;

/** Keys written by the checks live at most this long if the clean-up at the end cannot run. */
const KEY_TTL_MS = 60_000;

/** A string with characters of 2, 3 and 4 bytes in UTF-8: keys, owners and channels may be any Unicode. */
const UNICODE = "ключ 🔒 ✓";

// ---------------------------------------------------------------------------------------------
// Steps

/** `work` within the step deadline; a rejection passes through, a missing reply fails the check. */
function step<T>(ctx: CheckContext, what: string, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
    work.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (error: unknown) => { clearTimeout(timer); reject(error); },
    );
  });
}

/** Calls `fn`, turning a synchronous throw into a rejection (an adapter may throw instead of rejecting). */
function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A call that must resolve: a rejection fails the check, naming the call. */
async function must<T>(ctx: CheckContext, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await step(ctx, what, call(fn));
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    throw new CheckFailed(`${what} rejected: ${describeError(error)}`);
  }
}

/** A call that must reject: resolving (with an Error object too, as some clients do) fails the check. */
async function mustReject(ctx: CheckContext, what: string, fn: () => Promise<unknown>): Promise<unknown> {
  let value: unknown;
  try {
    value = await step(ctx, what, call(fn));
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    return error;
  }
  if (value instanceof Error) throw new CheckFailed(`${what} resolved with an Error object (${value.message}); it must reject with it`);
  throw new CheckFailed(`${what} resolved with ${show(value)}; it must reject`);
}

const key = (ctx: CheckContext, part: string): string => `${ctx.namespace}:{${ctx.run}}:${part}`;

/** Runs a script by EVAL (the checks that are not about EVALSHA). */
function evalScript(ctx: CheckContext, script: Lua, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
  return must(ctx, `eval(${scriptName(script)})`, () => ctx.adapter.eval(script.source, keys, args));
}

function scriptName(script: Lua): string {
  return /adapter kit: ([^\n]+)/.exec(script.source)?.[1] ?? script.sha;
}

/** Publishes `message` on `channel` from a script, as surelock's scripts do; resolves with the receiver count. */
async function publish(ctx: CheckContext, channel: string, message: string): Promise<number> {
  const reply = await evalScript(ctx, SCRIPTS.publish, [channel], [ctx.adapter.cluster ? "SPUBLISH" : "PUBLISH", message]);
  if (typeof reply !== "number") throw new CheckFailed(`PUBLISH from a script answered ${show(reply)}, not an integer`);
  return reply;
}

/** Writes a hash field through a script (KEYS[1]); resolves with the key as the script saw it. */
async function write(ctx: CheckContext, name: string, value: string): Promise<unknown> {
  ctx.written.add(name);
  return evalScript(ctx, SCRIPTS.write, [name], [value, KEY_TTL_MS]);
}

/** Polls `probe` (a Redis round trip each time) until it answers true or the deadline passes. */
async function eventually(ctx: CheckContext, what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ctx.timeoutMs;
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new CheckFailed(`${what}: not within ${ctx.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

function show(value: unknown): string {
  if (value instanceof Error) return `Error(${JSON.stringify(value.message)})`;
  if (typeof value === "string") return `${JSON.stringify(value)} (string)`;
  if (typeof value === "number") return `${value} (number)`;
  if (typeof value === "bigint") return `${value}n (bigint)`;
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return `[${value.map(show).join(", ")}]`;
  if (Buffer.isBuffer(value)) return `a Buffer (${JSON.stringify(value.toString("utf8"))})`;
  return typeof value;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : show(error);
}

/** Fails with every problem at once, or returns `passed`. */
function verdict(problems: readonly string[], passed: string): string {
  if (problems.length > 0) throw new CheckFailed(problems.join("; "));
  return passed;
}

/** Compares a reply to what Redis answers, part by part, naming each part that differs. */
function compare(problems: string[], label: string, got: unknown, want: unknown): void {
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) {
      problems.push(`${label}: expected an array, got ${show(got)}`);
      return;
    }
    if (got.length !== want.length) {
      problems.push(`${label}: expected ${want.length} elements, got ${got.length} (${show(got)})`);
      return;
    }
    want.forEach((w, i) => compare(problems, `${label}[${i}]`, got[i], w));
    return;
  }
  if (!Object.is(got, want)) problems.push(`${label}: expected ${show(want)}, got ${show(got)}`);
}

// ---------------------------------------------------------------------------------------------
// The checks

/** The adapter has the contract's members, with the right types. */
export const shape: Check = async ({ adapter }) => {
  const a = adapter as unknown as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof a.name !== "string" || a.name === "") problems.push(`name must be a non-empty string, got ${show(a.name)}`);
  if (typeof a.cluster !== "boolean") problems.push(`cluster must be a boolean, got ${show(a.cluster)}`);
  for (const method of ["evalsha", "eval", "command", "createSubscriber"]) {
    if (typeof a[method] !== "function") problems.push(`${method} must be a method, got ${show(a[method])}`);
  }
  if (a.commandThenWait !== undefined && typeof a.commandThenWait !== "function") {
    problems.push(`commandThenWait must be a method or absent, got ${show(a.commandThenWait)}`);
  }
  return verdict(problems, `name ${JSON.stringify(adapter.name)}, cluster ${String(adapter.cluster)}, ` +
    `commandThenWait ${a.commandThenWait === undefined ? "absent" : "present"}`);
};

/** command() sends plain commands and hands back their replies as strings, integers and arrays. */
export const command: Check = async (ctx) => {
  const problems: string[] = [];
  const { adapter } = ctx;
  compare(problems, "PING", await must(ctx, 'command(["PING"])', () => adapter.command(["PING"])), "PONG");
  compare(problems, "ECHO 42 (a number argument)", await must(ctx, 'command(["ECHO", 42])', () => adapter.command(["ECHO", 42])), "42");
  compare(problems, "ECHO of UTF-8", await must(ctx, "command([\"ECHO\", …])", () => adapter.command(["ECHO", UNICODE])), UNICODE);
  const time = await must(ctx, 'command(["TIME"])', () => adapter.command(["TIME"]));
  if (!Array.isArray(time) || time.length !== 2 || !time.every((t) => typeof t === "string" && /^\d+$/.test(t))) {
    problems.push(`TIME: expected two strings of digits, got ${show(time)}`);
  }
  const info = await must(ctx, 'command(["INFO", "server"])', () => adapter.command(["INFO", "server"]));
  // The endpoint reads the version from it, to refuse a deployment too old to work.
  const version = typeof info === "string" ? /redis_version:(\S+)/.exec(info)?.[1] : undefined;
  if (typeof info !== "string") problems.push(`INFO server: expected a string, got ${show(info)}`);
  else if (version === undefined) problems.push("INFO server: no redis_version line (surelock reads the version from it)");
  return verdict(problems, `PING, ECHO, TIME and INFO answer as Redis does (redis_version ${version ?? "?"})`);
};

/** `cluster` says what the deployment is: wake-ups use SPUBLISH in a Cluster, PUBLISH otherwise. */
export const clusterFlag: Check = async (ctx) => {
  const info = await must(ctx, 'command(["INFO", "cluster"])', () => ctx.adapter.command(["INFO", "cluster"]));
  const enabled = typeof info === "string" ? /cluster_enabled:(\d)/.exec(info)?.[1] : undefined;
  const isCluster = enabled === "1";
  const seen = enabled === undefined ? "INFO cluster has no cluster_enabled line (taken as not a Cluster)" : `cluster_enabled:${enabled}`;
  if (isCluster !== ctx.adapter.cluster) {
    throw new CheckFailed(`cluster is ${String(ctx.adapter.cluster)} but the server says ${seen}: ` +
      (isCluster ? "in a Cluster, keys must be routed by slot and wake-ups use sharded pub/sub" : "only a Cluster adapter may say cluster: true"));
  }
  return `cluster ${String(ctx.adapter.cluster)}, and the server says ${seen}`;
};

/** KEYS and ARGV arrive as sent: in order, numbers as decimal text, empty strings and UTF-8 intact. */
export const argumentsCheck: Check = async (ctx) => {
  const args: RedisArg[] = ["a", 7, 1_732_010_203_040_506, "", UNICODE, "x y", -1];
  const reply = await evalScript(ctx, SCRIPTS.echoArgs, [key(ctx, "a1"), key(ctx, "a2")], args);
  const problems: string[] = [];
  compare(problems, "reply", reply, [2, ...args.map(String)]);
  return verdict(problems, "2 KEYS and 7 ARGV arrived in order; numbers as their decimal text, empty and UTF-8 strings intact");
};

/** Replies keep the shapes surelock parses: exact integers, strings that stay strings, null, nested arrays. */
export const replyTypes: Check = async (ctx) => {
  const problems: string[] = [];
  const token = 1_732_010_203_040_506; // a fencing token: the server clock in µs
  const reply = await evalScript(ctx, SCRIPTS.replies, [key(ctx, "r")], [token, UNICODE]);
  const labels = ["integer (a µs token)", "negative integer", "zero", "bulk string of digits", "UTF-8 bulk string", "status reply",
    "nil inside an array", "nested arrays", "array with a nil inside"];
  const want = [token, -2, 0, "42", UNICODE, "OK", null, [1, [2, "x"], []], [1, null, 3]];
  if (!Array.isArray(reply) || reply.length !== want.length) {
    problems.push(`expected an array of ${want.length} elements, got ${show(reply)}`);
  } else {
    want.forEach((w, i) => compare(problems, labels[i] as string, reply[i], w));
  }
  compare(problems, "nil", await evalScript(ctx, SCRIPTS.nil, [key(ctx, "r")], []), null);
  compare(problems, "status reply", await evalScript(ctx, SCRIPTS.status, [key(ctx, "r")], []), "OK");
  return verdict(problems, "integers (exact to 2^53), strings, status replies, nil as null and nested arrays come back as surelock reads them");
};

/** An error reply rejects the call with an Error whose message starts with the reply's code. */
export const errorReplies: Check = async (ctx) => {
  const problems: string[] = [];
  const expect = (what: string, error: unknown, code?: string): void => {
    if (!(error instanceof Error)) problems.push(`${what} rejected with ${show(error)}, not an Error`);
    const found = errorReplyCode(error);
    if (!isErrorReply(error)) {
      problems.push(`${what} rejected with ${describeError(error)}: the reply's code is lost, so surelock would take a refusal for a broken connection`);
    } else if (code !== undefined && found !== code) {
      problems.push(`${what} rejected with ${describeError(error)}: expected the code ${code} first in its message`);
    }
  };
  expect("eval of redis.error_reply('SLCHECK …')",
    await mustReject(ctx, "eval of a script answering an error reply", () => ctx.adapter.eval(SCRIPTS.errorReply.source, [key(ctx, "e")], [])), "SLCHECK");
  ctx.written.add(key(ctx, "e"));
  expect("eval of a script whose redis.call fails (WRONGTYPE)",
    await mustReject(ctx, "eval of a failing script", () => ctx.adapter.eval(SCRIPTS.wrongType.source, [key(ctx, "e")], [KEY_TTL_MS])));
  expect('command(["ECHO"]) (wrong number of arguments)', await mustReject(ctx, 'command(["ECHO"])', () => ctx.adapter.command(["ECHO"])), "ERR");
  return verdict(problems, "error replies reject with an Error whose message starts with the reply's code (a ScriptError to surelock, never a ConnectionError)");
};

/** EVALSHA of a script the server has not cached rejects so that surelock sees NOSCRIPT and falls back to EVAL. */
export const noscript: Check = async (ctx) => {
  // Never sent as a whole, so no server has it cached.
  const unknown = lua(`-- surelock adapter kit: never loaded ${randomBytes(8).toString("hex")}\nreturn 1`);
  const error = await mustReject(ctx, "evalsha of a script the server does not have", () => ctx.adapter.evalsha(unknown.sha, [key(ctx, "n")], []));
  if (!isNoScript(error)) {
    throw new CheckFailed(`evalsha of an unknown script rejected with ${describeError(error)}: surelock recognises NOSCRIPT ` +
      '(in the message, or "No matching script", or an error named NoScript…) to fall back to EVAL; without it every script call fails after a restart or SCRIPT FLUSH');
  }
  return `rejects with ${describeError(error)}, which surelock takes for NOSCRIPT`;
};

/** EVAL sends the script's bytes unchanged (so the server caches it under its SHA1) and EVALSHA finds it. */
export const evalsha: Check = async (ctx) => {
  const problems: string[] = [];
  compare(problems, "eval", await evalScript(ctx, SCRIPTS.echo, [key(ctx, "s")], ["by-eval"]), "by-eval");
  let reply: unknown;
  try {
    reply = await step(ctx, "evalsha", call(() => ctx.adapter.evalsha(SCRIPTS.echo.sha, [key(ctx, "s")], ["by-evalsha"])));
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    const why = isNoScript(error) ? " (the server did not cache what eval sent under the script's SHA1: does eval change the script?)" : "";
    throw new CheckFailed(`evalsha of the script eval had just run rejected with ${describeError(error)}${why}`);
  }
  compare(problems, "evalsha", reply, "by-evalsha");
  return verdict(problems, "evalsha runs what eval cached under the script's SHA1");
};

/** Calls in flight together each get their own reply. */
export const concurrency: Check = async (ctx) => {
  const n = 32;
  const replies = await Promise.all(Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? must(ctx, "evalsha", () => ctx.adapter.evalsha(SCRIPTS.echo.sha, [key(ctx, "c")], [`call-${i}`]))
      : must(ctx, 'command(["ECHO"])', () => ctx.adapter.command(["ECHO", `call-${i}`]))));
  const crossed = replies.flatMap((r, i) => (r === `call-${i}` ? [] : [`call ${i} got ${show(r)}`]));
  return verdict(crossed, `${n} calls in flight at once (evalsha and command) each got their own reply`);
};

/** One key prefix on every KEYS entry, and command(args, key) names the same key the scripts wrote. */
export const keyPrefix: Check = async (ctx) => {
  const problems: string[] = [];
  const names = [key(ctx, "k1"), key(ctx, "k2"), key(ctx, UNICODE)];
  const seen = await evalScript(ctx, SCRIPTS.keys, names, []);
  if (!Array.isArray(seen) || seen.length !== names.length || !seen.every((s) => typeof s === "string")) {
    throw new CheckFailed(`a script returning KEYS answered ${show(seen)}: expected ${names.length} strings`);
  }
  const prefixes = names.map((n, i) => {
    const s = seen[i] as string;
    return s.endsWith(n) ? s.slice(0, s.length - n.length) : undefined;
  });
  names.forEach((n, i) => {
    if (prefixes[i] === undefined) problems.push(`KEYS[${i + 1}] reached the script as ${show(seen[i])}, which does not end with the key sent, ${JSON.stringify(n)}`);
  });
  const prefix = prefixes[0];
  if (prefixes.some((p) => p !== prefix)) problems.push(`the KEYS got different prefixes: ${prefixes.map((p) => show(p)).join(", ")}`);
  if (problems.length === 0) ctx.keyPrefix = prefix;
  const name = key(ctx, "hash");
  const value = `v-${ctx.run}`;
  await write(ctx, name, value);
  const read = await must(ctx, "command([\"HGET\", key, \"f\"], key)", () => ctx.adapter.command(["HGET", name, "f"], name));
  if (read !== value) {
    problems.push(`command(["HGET", key, "f"], key) answered ${show(read)} for a field a script had just set to ${JSON.stringify(value)} ` +
      "through KEYS[1] = key: command() must treat a key it is given (args[1] === key) as scripts' KEYS are treated, prefix included " +
      "(FencingGuard.highestToken() reads the guard this way)");
  }
  const where = prefix === "" ? "no prefix" : `prefix ${JSON.stringify(prefix)}`;
  return verdict(problems, `${where} on every KEYS entry, and command(args, key) reads the key the scripts wrote`);
};

/** Cluster: each call goes to the node that owns its key's slot. */
export const clusterRouting: Check = async (ctx) => {
  if (!ctx.adapter.cluster) throw new Skipped("not a Cluster adapter");
  const problems: string[] = [];
  // Sixteen hash tags land on every primary of a small Cluster.
  for (let i = 0; i < 16; i++) {
    const name = `${ctx.namespace}:{${ctx.run}-${i}}:route`;
    const value = `v${i}`;
    try {
      await write(ctx, name, value);
      const read = await must(ctx, "command([\"HGET\", key, \"f\"], key)", () => ctx.adapter.command(["HGET", name, "f"], name));
      if (read !== value) problems.push(`${name}: command(["HGET", key, "f"], key) answered ${show(read)}, expected ${JSON.stringify(value)}`);
    } catch (error) {
      problems.push(`${name}: ${messageOf(error)}`);
    }
  }
  return verdict(problems, "scripts and command(args, key) reach the owner of 16 different slots");
};

// ---------------------------------------------------------------------------------------------
// Subscriptions

/** The messages a subscriber delivered, and a way to wait for the next matching one. */
class Inbox {
  readonly messages: { channel: string; message: string }[] = [];
  #waiters: { test: (channel: string, message: string) => boolean; resolve: () => void }[] = [];

  readonly push = (channel: string, message: string): void => {
    this.messages.push({ channel, message });
    for (const w of this.#waiters.filter((x) => x.test(channel, message))) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
  };

  /** Resolves when a matching message has arrived (or already had). */
  until(test: (channel: string, message: string) => boolean): Promise<void> {
    if (this.messages.some((m) => test(m.channel, m.message))) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ test, resolve }));
  }
}

/** Opens a subscriber with an inbox; `use` runs with it, and it is closed afterwards (best effort). */
async function withSubscriber<T>(ctx: CheckContext, use: (s: RedisSubscriber, inbox: Inbox) => Promise<T>): Promise<T> {
  const subscriber = await must(ctx, "createSubscriber()", () => ctx.adapter.createSubscriber());
  const inbox = new Inbox();
  subscriber.onMessage(inbox.push);
  try {
    return await use(subscriber, inbox);
  } finally {
    await step(ctx, "close()", call(() => subscriber.close())).catch(() => {});
  }
}

const channelName = (ctx: CheckContext, part: string): string => key(ctx, `ch:${part}`);

/**
 * subscribe() resolves once the server confirmed (a message published right after reaches it),
 * messages arrive in order with the channel as it was subscribed (the adapter's prefix taken
 * off), on one handler for every channel, and onMessage replaces that handler.
 */
export const subscribe: Check = (ctx) => withSubscriber(ctx, async (subscriber, inbox) => {
  const problems: string[] = [];
  const first = channelName(ctx, "first");
  const second = channelName(ctx, UNICODE);
  await must(ctx, "subscribe()", () => subscriber.subscribe(first));
  await must(ctx, "subscribe() of a second channel", () => subscriber.subscribe(second));
  const sent = ["m1", "m2", UNICODE, "g ticket 1732010203040506 30000"];
  for (const message of sent) {
    const receivers = await publish(ctx, first, message);
    if (receivers < 1) problems.push(`a message published right after subscribe() resolved reached ${receivers} subscribers: subscribe() must resolve only once the server confirmed`);
  }
  await publish(ctx, second, "on the second channel");
  await step(ctx, "the messages", inbox.until((c, m) => c === second && m === "on the second channel")).catch((error: unknown) => {
    problems.push(`${messageOf(error)}; delivered: ${JSON.stringify(inbox.messages)}`);
  });
  const expected = [...sent.map((message) => ({ channel: first, message })), { channel: second, message: "on the second channel" }];
  if (JSON.stringify(inbox.messages) !== JSON.stringify(expected)) {
    problems.push(`delivered ${JSON.stringify(inbox.messages)}, expected ${JSON.stringify(expected)} (each message once, in order, ` +
      "with the channel name given to subscribe(): without the adapter's key prefix, as the channel is a script's KEYS entry)");
  }
  const replacement = new Inbox();
  subscriber.onMessage(replacement.push);
  const before = inbox.messages.length;
  await publish(ctx, first, "after onMessage");
  await step(ctx, "a message to the new handler", replacement.until((_, m) => m === "after onMessage")).catch((error: unknown) => {
    problems.push(`after a second onMessage(): ${messageOf(error)}`);
  });
  if (inbox.messages.length !== before) problems.push("after a second onMessage(), the first handler still received messages: onMessage sets the one handler");
  return verdict(problems, "subscribe() resolves once confirmed; messages arrive once, in order, on the subscribed (unprefixed) channel, UTF-8 intact; onMessage replaces the handler");
});

/** unsubscribe() stops the channel, and only that channel. */
export const unsubscribe: Check = (ctx) => withSubscriber(ctx, async (subscriber, inbox) => {
  const problems: string[] = [];
  const gone = channelName(ctx, "gone");
  const kept = channelName(ctx, "kept");
  await must(ctx, "subscribe()", () => subscriber.subscribe(gone));
  await must(ctx, "subscribe()", () => subscriber.subscribe(kept));
  await must(ctx, "unsubscribe()", () => subscriber.unsubscribe(gone));
  const receivers = await publish(ctx, gone, "after unsubscribe");
  if (receivers !== 0) problems.push(`a message published after unsubscribe() resolved reached ${receivers} subscribers`);
  await publish(ctx, kept, "still subscribed");
  await step(ctx, "a message on the channel still subscribed", inbox.until((c, m) => c === kept && m === "still subscribed")).catch((error: unknown) => {
    problems.push(messageOf(error));
  });
  if (inbox.messages.some((m) => m.channel === gone)) problems.push("a message arrived on the unsubscribed channel");
  return verdict(problems, "unsubscribe() resolves once the channel is off; other channels go on");
});

/** Parses CLIENT LIST: one `k=v ...` line per connection. */
function clientList(reply: unknown): Map<string, Record<string, string>> {
  const clients = new Map<string, Record<string, string>>();
  for (const line of String(reply).split("\n")) {
    const fields = Object.fromEntries(line.trim().split(" ").flatMap((pair) => {
      const i = pair.indexOf("=");
      return i > 0 ? [[pair.slice(0, i), pair.slice(i + 1)]] : [];
    })) as Record<string, string>;
    if (fields.id !== undefined) clients.set(fields.id, fields);
  }
  return clients;
}

/**
 * The default way to cut a subscriber's connection: find it with CLIENT LIST (a pub/sub
 * connection that appeared with it, subscribed to exactly `count` channels) and CLIENT KILL it.
 * Returns undefined once done, or why it could not.
 */
async function clientKill(ctx: CheckContext, route: string, before: ReadonlySet<string>, count: number): Promise<string | undefined> {
  let listed: unknown;
  try {
    listed = await step(ctx, "CLIENT LIST", call(() => ctx.adapter.command(["CLIENT", "LIST", "TYPE", "pubsub"], route)));
  } catch (error) {
    return `CLIENT LIST failed (${messageOf(error)}); pass options.dropSubscribers to cut the subscriber's connection another way`;
  }
  const field = ctx.adapter.cluster ? "ssub" : "sub";
  const found = [...clientList(listed).values()].filter((c) => !before.has(c.id as string) && Number(c[field]) === count);
  if (found.length !== 1) {
    return `CLIENT LIST showed ${found.length} new pub/sub connections subscribed to ${count} channels, so the subscriber's own could not be told apart; ` +
      "pass options.dropSubscribers to cut it another way";
  }
  try {
    await step(ctx, "CLIENT KILL", call(() => ctx.adapter.command(["CLIENT", "KILL", "ID", (found[0] as Record<string, string>).id as string], route)));
  } catch (error) {
    return `CLIENT KILL failed (${messageOf(error)}); pass options.dropSubscribers to cut the subscriber's connection another way`;
  }
  return undefined;
}

/**
 * After its connection was cut, the subscriber says so (onReconnect, or a "*" message on each
 * channel: messages may have been missed) and its channels deliver again without being asked.
 */
export const reconnect: Check = async (ctx) => {
  if (ctx.dropSubscribers === false) throw new Skipped("options.dropSubscribers is false");
  const channels = [channelName(ctx, "r1"), channelName(ctx, "r2")];
  const route = channels[0] as string;
  let before = new Set<string>();
  if (ctx.dropSubscribers === undefined) {
    try {
      before = new Set(clientList(await step(ctx, "CLIENT LIST", call(() => ctx.adapter.command(["CLIENT", "LIST", "TYPE", "pubsub"], route)))).keys());
    } catch (error) {
      throw new Skipped(`CLIENT LIST failed (${messageOf(error)}), so the subscriber's connection cannot be found and cut; pass options.dropSubscribers to cut it another way`);
    }
  }
  return withSubscriber(ctx, async (subscriber, inbox) => {
    let announced = false;
    const reconnected = new Promise<void>((resolve) => subscriber.onReconnect(() => { announced = true; resolve(); }));
    for (const channel of channels) await must(ctx, "subscribe()", () => subscriber.subscribe(channel));
    const starred = Promise.all(channels.map((c) => inbox.until((ch, m) => ch === c && m === "*")));
    if (ctx.dropSubscribers) {
      await must(ctx, "options.dropSubscribers()", async () => { await (ctx.dropSubscribers as () => void | Promise<void>)(); });
    } else {
      const why = await clientKill(ctx, route, before, channels.length);
      if (why !== undefined) throw new Skipped(why);
    }
    await step(ctx, 'onReconnect() or a "*" message on every channel after the connection was cut', Promise.race([reconnected, starred]));
    const how = announced ? "onReconnect() was called" : 'a "*" message came on every channel';
    for (const channel of channels) {
      let n = 0;
      await eventually(ctx, `${channel} to deliver again after the reconnect (the adapter must subscribe its channels again)`, async () => {
        const message = `after reconnect ${++n}`;
        if ((await publish(ctx, channel, message)) < 1) return false;
        await step(ctx, "the message after the reconnect", inbox.until((c, m) => c === channel && m === message));
        return true;
      });
    }
    return `after the connection was cut, ${how} and both channels delivered again`;
  });
};

/**
 * close() resolves, and the server no longer delivers to the closed subscriber. (withSubscriber
 * closes it again afterwards, in case a step failed before: a second close() must be harmless.)
 */
export const close: Check = (ctx) => withSubscriber(ctx, async (subscriber) => {
  const channel = channelName(ctx, "closed");
  await must(ctx, "subscribe()", () => subscriber.subscribe(channel));
  await must(ctx, "close()", () => subscriber.close());
  // The server drops the subscription when it has processed the disconnect, a moment after QUIT's reply.
  await eventually(ctx, "the closed subscriber's subscription to end", async () => (await publish(ctx, channel, "after close")) === 0);
  return "close() resolves and the subscription ends with it";
});

// ---------------------------------------------------------------------------------------------
// Replicas and end to end

/**
 * commandThenWait (optional): the write's reply with WAIT's count, both on one connection; the
 * script's KEYS treated as eval treats them; a failing write (NOSCRIPT) rejects.
 */
export const replicaWait: Check = async (ctx) => {
  const { adapter } = ctx;
  if (adapter.commandThenWait === undefined) {
    throw new Skipped("no commandThenWait: with the `replicas` option surelock then sends WAIT through command() after each write, " +
      "which counts the right writes only if the adapter sends everything on one connection per node");
  }
  const thenWait = adapter.commandThenWait.bind(adapter);
  const problems: string[] = [];
  const name = key(ctx, "wait");
  ctx.written.add(name);
  // WAIT returns as soon as enough replicas acknowledged: a generous timeout costs nothing on a
  // healthy deployment, and a busy machine is not mistaken for a missing replica.
  const wait = { replicas: Math.max(1, ctx.replicas), timeoutMs: Math.max(100, Math.floor(ctx.timeoutMs / 2)) };
  const expectedKey = await evalScript(ctx, SCRIPTS.write, [name], ["by-eval", KEY_TTL_MS]);
  const acked = await must(ctx, "commandThenWait(EVAL …)", () =>
    thenWait(["EVAL", SCRIPTS.write.source, 1, name, "by-commandThenWait", KEY_TTL_MS], name, wait));
  if (typeof acked !== "object" || acked === null) throw new CheckFailed(`commandThenWait resolved with ${show(acked)}, not { reply, acknowledged }`);
  compare(problems, "reply (KEYS[1] as the script saw it)", acked.reply, expectedKey);
  if (typeof acked.acknowledged !== "number" || !Number.isInteger(acked.acknowledged) || acked.acknowledged < 0) {
    problems.push(`acknowledged: expected a non-negative integer, got ${show(acked.acknowledged)}`);
  } else if (acked.acknowledged < ctx.replicas) {
    problems.push(`acknowledged ${acked.acknowledged}, expected at least options.replicas = ${ctx.replicas}`);
  }
  if (acked.waitError !== undefined) problems.push(`WAIT failed: ${describeError(acked.waitError)}`);
  const read = await must(ctx, 'command(["HGET", key, "f"], key)', () => adapter.command(["HGET", name, "f"], name));
  compare(problems, "the write of commandThenWait, read back", read, "by-commandThenWait");
  const unknown = lua(`-- surelock adapter kit: never loaded ${randomBytes(8).toString("hex")}\nreturn 1`);
  const error = await mustReject(ctx, "commandThenWait(EVALSHA of an unknown script)", () => thenWait(["EVALSHA", unknown.sha, 1, name], name, wait));
  if (!isNoScript(error)) problems.push(`commandThenWait(EVALSHA of an unknown script) rejected with ${describeError(error)}, not a NOSCRIPT surelock recognises`);
  const count = typeof acked.acknowledged === "number" ? acked.acknowledged : "?";
  return verdict(problems, `the write's reply and WAIT's count (${count} of ${wait.replicas} asked, within ${wait.timeoutMs} ms); NOSCRIPT rejects`);
};

/** Waits for surelock to report that an acquire of `key` started waiting. */
function startsWaiting(name: string): { promise: Promise<void>; stop(): void } {
  let handler: (message: unknown) => void = () => {};
  const promise = new Promise<void>((resolve) => {
    handler = (message) => {
      const m = message as WaitMessage;
      if (m.key === name && m.phase === "start") resolve();
    };
    diagnostics.subscribe(channels.wait.name, handler);
  });
  return { promise, stop: () => diagnostics.unsubscribe(channels.wait.name, handler) };
}

/** A waiter of `waiterSide` queues behind `held`, which is then released: the waiter's lease. */
async function handOff(ctx: CheckContext, held: Lease, waiterSide: Surelock, lockKey: string): Promise<Lease> {
  const waiting = startsWaiting(lockKey);
  try {
    const next = waiterSide.mutex(lockKey).acquire({ timeout: ctx.timeoutMs * 2 });
    next.catch(() => {});
    await step(ctx, "the second Surelock's acquire to start waiting", waiting.promise);
    await must(ctx, "release", () => held.release());
    return await must(ctx, "the waiter's acquire after the release", () => next);
  } finally {
    waiting.stop();
  }
}

/**
 * surelock itself over the adapter: a lock taken, refused to a second instance, handed to its
 * waiter through a wake-up on release, with growing fencing tokens; a fenced write and its
 * highest token; an error reply surfacing as ScriptError.
 */
export const endToEnd: Check = async (ctx) => {
  const prefix = `${ctx.namespace}-${ctx.run}`;
  const options = { redis: ctx.adapter, prefix, commandTimeout: ctx.timeoutMs };
  const holderSide = new Surelock(options);
  const waiterSide = new Surelock(options);
  const lockKey = ctx.run;
  const problems: string[] = [];
  try {
    const first = await must(ctx, "acquire", () => holderSide.mutex(lockKey).acquire({ timeout: ctx.timeoutMs }));
    if (typeof first.fencingToken !== "bigint") problems.push(`fencing token ${show(first.fencingToken)}`);
    const refused = await must(ctx, "tryAcquire by a second Surelock", () => waiterSide.mutex(lockKey).tryAcquire());
    if (refused !== null) {
      problems.push("a second Surelock got the lock while it was held");
      await refused.release();
    }
    const second = await handOff(ctx, first, waiterSide, lockKey);
    if (second.fencingToken <= first.fencingToken) problems.push(`the waiter's token ${second.fencingToken} is not above the first holder's ${first.fencingToken}`);
    const token = second.fencingToken;
    const guard = waiterSide.guard(lockKey);
    const data = `${ctx.namespace}:{${lockKey}}:data`;
    ctx.written.add(data);
    const written = await must(ctx, "guard.write", () => guard.write(token, "SET", data, "fenced", "PX", KEY_TTL_MS));
    if (!written.written) problems.push(`guard.write with the holder's token was refused (highest token ${written.highestToken})`);
    const highest = await must(ctx, "guard.highestToken", () => guard.highestToken());
    if (highest !== token) problems.push(`guard.highestToken() answered ${show(highest)}, expected ${token}n (it reads the guard through command(args, key))`);
    const failed = await mustReject(ctx, "guard.write of HSET on a string", () => guard.write(token, "HSET", data, "f", "v"));
    if (!(failed instanceof ScriptError)) {
      problems.push(`a fenced write refused by Redis (WRONGTYPE) rejected with ${describeError(failed)}, expected ScriptError: surelock could not read the error reply's code`);
    }
    await must(ctx, "release", () => second.release());
  } finally {
    await Promise.all([holderSide.close(), waiterSide.close()]);
  }
  return verdict(problems, "acquire, refusal to a second instance, hand-off to a waiter on release, growing fencing tokens, a fenced write and ScriptError all work through the adapter");
};

/** Deletes what the checks wrote (every key also has a PTTL, in case this fails). */
export async function cleanUp(ctx: CheckContext): Promise<void> {
  // One script per slot: keys of different hash tags may live on different Cluster nodes.
  const bySlotTag = new Map<string, string[]>();
  for (const name of ctx.written) {
    const tag = /\{([^}]*)\}/.exec(name)?.[1] ?? name;
    bySlotTag.set(tag, [...(bySlotTag.get(tag) ?? []), name]);
  }
  await Promise.all([...bySlotTag.values()].map((names) => step(ctx, "clean-up", call(() => ctx.adapter.eval(SCRIPTS.clean.source, names, []))).catch(() => {})));
}
