/**
 * The Lua scripts the checks send (fixed texts), the values they send, and the script calls they
 * share: writing a key, publishing from a script, and deleting what the run wrote.
 */
import { createHash } from "node:crypto";
import type { RedisArg } from "../../adapters/types.js";
import { call, CheckFailed, must, show, step, type CheckContext } from "./check-steps.js";

/** A Lua script as the checks send it, with its SHA1 (what EVALSHA names it by). */
export interface Lua {
  readonly source: string;
  readonly sha: string;
}

/** A script with its SHA1 computed here, as the server will name it. */
export const lua = (source: string): Lua => ({ source, sha: createHash("sha1").update(source, "utf8").digest("hex") });

/**
 * The scripts the checks send. Fixed texts, so that a run adds no new script to the server's cache
 * beyond these (the NOSCRIPT check names a script that is never sent).
 */
export const SCRIPTS = {
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
export const KEY_TTL_MS = 60_000;

/** A string with characters of 2, 3 and 4 bytes in UTF-8: keys, owners and channels may be any Unicode. */
export const UNICODE = "ключ 🔒 ✓";

/** Runs a script by EVAL (the checks that are not about EVALSHA). */
export function evalScript(ctx: CheckContext, script: Lua, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
  return must(ctx, `eval(${scriptName(script)})`, () => ctx.adapter.eval(script.source, keys, args));
}

/** The name a kit script gives itself in its first line, for messages. */
function scriptName(script: Lua): string {
  return /adapter kit: ([^\n]+)/.exec(script.source)?.[1] ?? script.sha;
}

/** Publishes `message` on `channel` from a script, as surelock's scripts do; resolves with the receiver count. */
export async function publish(ctx: CheckContext, channel: string, message: string): Promise<number> {
  const reply = await evalScript(ctx, SCRIPTS.publish, [channel], [ctx.adapter.cluster ? "SPUBLISH" : "PUBLISH", message]);
  if (typeof reply !== "number") throw new CheckFailed(`PUBLISH from a script answered ${show(reply)}, not an integer`);
  return reply;
}

/** Writes a hash field through a script (KEYS[1]); resolves with the key as the script saw it. */
export async function write(ctx: CheckContext, name: string, value: string): Promise<unknown> {
  ctx.written.add(name);
  return evalScript(ctx, SCRIPTS.write, [name], [value, KEY_TTL_MS]);
}

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
