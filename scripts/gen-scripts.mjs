// Builds src/scripts/lua.generated.ts from src/scripts/*.lua: each script's final text (its
// `--@include lib/…` lines replaced by those files less the helpers it never calls, its declared
// KEYS and ARGV bound to locals, its comments removed), its SHA1, and the names of its KEYS and
// ARGV in order. The header lines
//   -- KEYS: lock, queue, tickets        (or `...keys` for a variable list)
//   -- ARGV: owner, hold, ...rest
// are the one place a script's calling convention is written: the typed bindings in
// src/protocol/ (through bind, src/scripts/binding.ts) take records keyed by these names, so a KEYS/ARGV mix-up is a type error.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = new URL("../src/scripts/", import.meta.url).pathname;

/** `-- KEYS: a, b, ...rest` → { names: ["a", "b"], rest: true }. */
function declared(lua, file, what) {
  const line = lua.split("\n").find((l) => l.startsWith(`-- ${what}:`));
  if (!line) throw new Error(`${file}: missing the "-- ${what}:" header line`);
  const items = line.slice(`-- ${what}:`.length).split(",").map((s) => s.trim()).filter(Boolean);
  const rest = items.length > 0 && items[items.length - 1].startsWith("...");
  const names = rest ? items.slice(0, -1) : items;
  for (const name of names) {
    if (!/^[a-z][A-Za-z0-9]*$/.test(name)) throw new Error(`${file}: bad ${what} name ${JSON.stringify(name)}`);
  }
  return { names, rest };
}

function expand(lua, file) {
  return lua.replace(/^--@include (\S+)$/gm, (_, path) => {
    const included = readFileSync(join(dir, path), "utf8").trimEnd();
    if (included.includes("--@include")) throw new Error(`${file}: ${path} may not include other files`);
    return included;
  });
}

/**
 * Drops the top-level `local function` blocks (a block: its comment lines just above, the
 * `local function name(` line, and everything up to the next line that is exactly `end`) that the
 * script never calls, directly or through other helpers. Redis creates every helper a script
 * defines (a Lua closure) on each call, whether it is used or not; an include brings them all.
 * References are found by name in the code with its comments removed (none of our strings holds
 * "--"), so a name that merely appears keeps its function: the error is only ever to keep one.
 */
function shake(lua, file) {
  const lines = lua.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^local function ([A-Za-z_]\w*)\(/.exec(lines[i]);
    if (!m) continue;
    let start = i;
    while (start > 0 && lines[start - 1].startsWith("--") && !lines[start - 1].startsWith("--@")) start--;
    // A one-line helper (`local function f(a) return a end`) is its own block.
    let end = i;
    if (!/\bend\s*$/.test(lines[i].replace(/--.*$/, ""))) {
      end = i + 1;
      while (end < lines.length && lines[end] !== "end") end++;
    }
    if (end === lines.length) throw new Error(`${file}: function ${m[1]} has no closing "end" line at column 0`);
    // Its body is indented: a line at column 0 inside it means the block was misread.
    if (lines.slice(i + 1, end).some((l) => /^[^\s-]/.test(l))) throw new Error(`${file}: function ${m[1]}: body not indented`);
    blocks.push({ name: m[1], start, end, code: code([lines[i].slice(m[0].length), ...lines.slice(i + 1, end)]) });
    i = end;
  }
  const inBlock = new Set(blocks.flatMap((b) => Array.from({ length: b.end - b.start + 1 }, (_, k) => b.start + k)));
  const rest = code(lines.filter((_, i) => !inBlock.has(i)));
  const uses = (text, name) => new RegExp(`\\b${name}\\b`).test(text);
  const kept = new Set();
  const frontier = blocks.filter((b) => uses(rest, b.name));
  while (frontier.length > 0) {
    const b = frontier.pop();
    if (kept.has(b.name)) continue;
    kept.add(b.name);
    frontier.push(...blocks.filter((o) => !kept.has(o.name) && uses(b.code, o.name)));
  }
  const gone = blocks.filter((b) => !kept.has(b.name));
  const dropped = new Set(gone.flatMap((b) => Array.from({ length: b.end - b.start + 1 }, (_, k) => b.start + k)));
  const left = lines.filter((_, i) => !dropped.has(i));
  // A check of the cut itself: nothing left may name a helper that was dropped.
  const leftCode = code(left);
  const missing = gone.filter((b) => uses(leftCode, b.name)).map((b) => b.name);
  if (missing.length > 0) throw new Error(`${file}: dropped helpers still named: ${missing.join(", ")}`);
  return left.join("\n");
}

/** Lines of Lua without their comments, as one text. */
function code(lines) {
  return lines.map((l) => l.replace(/--.*$/, "")).join("\n");
}

/**
 * The code as Redis runs it: comments and blank lines removed (they are for readers of the .lua
 * files, and would be carried in every bundle and sent with every EVAL). Our strings hold no "--".
 */
function strip(lua) {
  return code(lua.split("\n")).split("\n").map((l) => l.trimEnd()).filter((l) => l !== "").join("\n");
}

function bind(names, table) {
  if (names.length === 0) return "";
  return `local ${names.join(", ")} = ${names.map((_, i) => `${table}[${i + 1}]`).join(", ")}\n`;
}

const entries = readdirSync(dir)
  .filter((f) => f.endsWith(".lua"))
  .sort()
  .map((file) => {
    const source = readFileSync(join(dir, file), "utf8");
    const keys = declared(source, file, "KEYS");
    const args = declared(source, file, "ARGV");
    // The header (the leading comment block) stays first; the bindings follow it.
    const lines = source.split("\n");
    const bodyAt = lines.findIndex((l) => !l.startsWith("--") || l.startsWith("--@include"));
    const header = lines.slice(0, bodyAt).join("\n");
    const body = lines.slice(bodyAt).join("\n");
    const lua = strip(shake(`${header}\n${bind(keys.names, "KEYS")}${bind(args.names, "ARGV")}${expand(body, file)}`, file));
    const name = file.slice(0, -4).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    const sha = createHash("sha1").update(lua).digest("hex");
    return `  ${name}: {\n    name: ${JSON.stringify(file.slice(0, -4))},\n    sha: "${sha}",\n` +
      `    keys: ${JSON.stringify(keys.names)},\n    restKeys: ${keys.rest},\n` +
      `    args: ${JSON.stringify(args.names)},\n    restArgs: ${args.rest},\n    lua: ${JSON.stringify(lua)} as string,\n  },`;
  });

writeFileSync(
  join(dir, "lua.generated.ts"),
  "// Generated by scripts/gen-scripts.mjs from src/scripts/*.lua. Do not edit.\n" +
    `export const LUA = {\n${entries.join("\n")}\n} as const;\n`,
);
