// Runs test files with node:test's run() in the order given, N at a time. `node --test` sorts its
// files by name, which would start a long file late and leave one lane working alone at the end;
// scripts/run-tests.mjs passes them longest first instead (scripts/test-weights.json).
//
//   node --import tsx scripts/test-queue.mjs --concurrency N --timeout MS --durations FILE
//        --reporter NAME=DESTINATION [--reporter ...] -- FILE ...
//
// A reporter is one of Node's (spec, tap, dot, junit) or a module path; a destination is stdout or
// a file. Each file's own duration is written to the --durations file (JSON, seconds by path) as
// the run ends, for scripts/test-weights.json. Exit 1 when a test failed, as `node --test` does.
import { createWriteStream, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { run } from "node:test";
import * as builtin from "node:test/reporters";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const split = args.indexOf("--");
const files = split >= 0 ? args.slice(split + 1) : [];
const options = split >= 0 ? args.slice(0, split) : args;
const value = (name) => (options.includes(name) ? options[options.indexOf(name) + 1] : undefined);
const reporters = options.flatMap((arg, i) => (options[i - 1] === "--reporter" ? [arg] : []));

async function reporterOf(name) {
  if (Object.hasOwn(builtin, name)) return builtin[name];
  const module = await import(pathToFileURL(resolve(name)).href);
  return module.default ?? module;
}

const durations = {};
const stream = run({
  files,
  concurrency: Number(value("--concurrency") ?? 1),
  timeout: Number(value("--timeout") ?? Infinity),
});
for (const spec of reporters) {
  const at = spec.lastIndexOf("=");
  const [name, destination] = at > 0 ? [spec.slice(0, at), spec.slice(at + 1)] : [spec, "stdout"];
  let reporter = await reporterOf(name);
  // Node's spec reporter is a class (a Transform); the others are async generator functions.
  if (reporter.prototype && Object.getOwnPropertyDescriptor(reporter.prototype, "constructor")) reporter = new reporter();
  stream.compose(reporter).pipe(destination === "stdout" ? process.stdout : createWriteStream(destination));
}
stream.on("test:fail", (data) => {
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
// A file's duration: its top-level tests and suites, which run one after another (the file's
// own event comes only when it failed by itself, and does not count here).
for (const event of ["test:pass", "test:fail"]) {
  stream.on(event, (data) => {
    if (data.nesting !== 0 || data.file === undefined || data.name === data.file) return;
    const file = relative(process.cwd(), data.file).split("\\").join("/");
    durations[file] = (durations[file] ?? 0) + (data.details.duration_ms ?? 0);
  });
}
const where = value("--durations");
const seconds = () => Object.fromEntries(Object.entries(durations).map(([file, ms]) => [file, Math.round(ms / 100) / 10]));
if (where) process.on("exit", () => writeFileSync(where, `${JSON.stringify(seconds(), null, 2)}\n`));
