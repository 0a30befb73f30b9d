/** Checks of where keys go: one prefix on every key, and (in a Cluster) the node that owns each slot. */
import { messageOf } from "../error-replies.js";
import { CheckFailed, Skipped, key, must, show, verdict, type Check } from "./check-steps.js";
import { evalScript, SCRIPTS, UNICODE, write } from "./kit-scripts.js";

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
