/** Checks across the stack: a write followed by WAIT (commandThenWait), and surelock itself over the adapter. */
import { randomBytes } from "node:crypto";
import * as diagnostics from "node:diagnostics_channel";
import { channels, ScriptError, Surelock, type Lease, type WaitMessage } from "../../index.js";
import { isNoScript } from "../error-replies.js";
import { CheckFailed, compare, describeError, key, must, mustReject, show, Skipped, step, verdict, type Check, type CheckContext } from "./check-steps.js";
import { evalScript, KEY_TTL_MS, lua, SCRIPTS } from "./kit-scripts.js";

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
