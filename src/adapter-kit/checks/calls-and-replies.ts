/**
 * Checks of the adapter's calls: its shape, plain commands, the cluster flag, what scripts receive
 * and reply, error replies, NOSCRIPT and EVALSHA, and calls in flight together.
 */
import { randomBytes } from "node:crypto";
import type { RedisArg } from "../../adapters/types.js";
import { errorReplyCode, isErrorReply, isNoScript } from "../error-replies.js";
import { call, CheckFailed, compare, describeError, key, must, mustReject, show, step, verdict, type Check } from "./check-steps.js";
import { evalScript, KEY_TTL_MS, lua, SCRIPTS, UNICODE } from "./kit-scripts.js";

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
