// A compact node:test reporter for people: one line per top-level suite as it finishes, grouped
// by file, with the diagnostics tests print (t.diagnostic: measured figures). Each failure is
// printed in full right under its suite (where, the error with its stack, what the file printed),
// so a run cut short still shows it; at the end, the list of failures and a closing line
// "tests: N passed, N failed, N skipped", then the runner's own counts as Node's spec reporter
// prints them ("ℹ tests N", "ℹ pass N", ...). scripts/run-tests.mjs uses it next to a JUnit file for CI.
//
// It reads test:start / test:pass / test:fail / test:diagnostic / test:stdout / test:stderr.
// Those arrive in declaration order, one file after another (test:complete does not: it comes as
// tests end, so it is not used). Each file is a test of its own at nesting 0, named by its path,
// reported only when the file itself failed (a crash, an error after its tests ended).
import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import { inspect } from "node:util";

const SUMMARY = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;
const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
const green = (t) => paint(32, t);
const red = (t) => paint(31, t);
const dim = (t) => paint(2, t);

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const where = (file) => (file ? relative(process.cwd(), file) : "");

export default async function* compactReporter(source) {
  const startedAt = performance.now();
  const totals = { passed: 0, failed: 0, skipped: 0 };
  const failures = [];
  let reported = 0; // failures already printed in full
  const shown = new Set(); // files whose output was printed
  const output = new Map(); // file -> what it printed (shown with its failures)
  const warnings = [];
  const summary = []; // the runner's own closing counts ("tests 713", "pass 713", ...)
  const files = new Set();
  let stack = []; // names of the tests being reported, by nesting
  let current = { file: undefined, passed: 0, failed: 0, skipped: 0, diagnostics: [] };

  for await (const { type, data } of source) {
    if (type === "test:stdout" || type === "test:stderr") {
      if (data.file) output.set(data.file, (output.get(data.file) ?? "") + data.message);
      continue;
    }
    if (type === "test:diagnostic") {
      if (data.file) current.diagnostics.push(data.message);
      else if (SUMMARY.test(data.message)) summary.push(data.message);
      else warnings.push(data.message);
      continue;
    }
    if (type === "test:start") {
      stack = [...stack.slice(0, data.nesting), data.name];
      continue;
    }
    if (type !== "test:pass" && type !== "test:fail") continue;

    const isFile = data.nesting === 0 && data.name === data.file;
    const isSuite = data.details?.type === "suite";
    const error = data.details?.error;
    // A suite or file that failed only because something inside it failed adds nothing: that
    // was counted where it happened. One that failed by itself (a hook, a crash) counts.
    const onlyInside = (isSuite || isFile) && error?.failureType === "subtestsFailed";
    if (type === "test:fail" && onlyInside && isFile) continue;
    if (type === "test:fail" && !onlyInside) {
      totals.failed++;
      current.failed++;
      failures.push({ path: [...stack.slice(0, data.nesting), ...(isFile ? [] : [data.name])], file: data.file, error, isFile });
    } else if (type === "test:pass" && !isSuite && !isFile) {
      if (data.skip !== undefined || data.todo !== undefined) {
        totals.skipped++;
        current.skipped++;
      } else {
        totals.passed++;
        current.passed++;
      }
    }
    if (data.nesting !== 0) continue;

    // A top-level test or suite (or a failed file) is done: one line for it.
    if (data.file && data.file !== current.file) {
      files.add(data.file);
      yield `${where(data.file)}\n`;
    }
    current.file = data.file;
    const counts = [
      `${current.passed} passed`,
      ...(current.failed > 0 ? [`${current.failed} failed`] : []),
      ...(current.skipped > 0 ? [`${current.skipped} skipped`] : []),
    ].join(", ");
    const mark = type === "test:fail" ? red("✖") : green("✔");
    const name = isFile ? "(the file itself)" : data.name;
    yield `  ${mark} ${name} ${dim(`(${counts}, ${seconds(data.details?.duration_ms ?? 0)})`)}\n`;
    for (const message of current.diagnostics) yield `      ${dim(message)}\n`;
    current = { file: data.file, passed: 0, failed: 0, skipped: 0, diagnostics: [] };
    for (; reported < failures.length; reported++) {
      const f = failures[reported];
      yield `\n    ${red(`${reported + 1}) ${title(f)}`)}\n${indent(describe(f.error), "       ")}\n`;
      if (f.file && output.has(f.file) && !shown.has(f.file)) {
        shown.add(f.file);
        yield `       ${dim(`output of ${where(f.file)}:`)}\n${indent(output.get(f.file).trimEnd(), "       | ")}\n`;
      }
      if (reported === failures.length - 1) yield "\n";
    }
  }

  if (warnings.length > 0) {
    yield `\n${red("Warnings from the test runner:")}\n`;
    for (const message of warnings) yield `  ${message}\n`;
  }
  if (failures.length > 0) {
    yield `\n${red(`Failed (${failures.length}, each in full above):`)}\n`;
    for (const [i, f] of failures.entries()) yield `  ${i + 1}) ${title(f)}\n`;
  }
  yield `\n${files.size} files in ${seconds(performance.now() - startedAt)}\n`;
  const closing = `tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n` +
    // The runner's counts as Node's own reporters print them, for tools that read those lines.
    summary.map((message) => `ℹ ${message}\n`).join("");
  yield closing;
  // run-tests.mjs prints it again after the coverage report, so that a log's last lines are the counts.
  if (process.env.SURELOCK_TEST_SUMMARY) writeFileSync(process.env.SURELOCK_TEST_SUMMARY, closing);
}

/** `file › suite › test`, or `file (the file itself)`. */
function title(f) {
  return `${where(f.file)}${f.path.length > 0 ? ` › ${f.path.join(" › ")}` : " (the file itself)"}`;
}

/** The error of a failed test as the runner wraps it: the original error (cause) in full. */
function describe(error) {
  if (!error) return "(no error reported)";
  const cause = error.cause;
  if (cause && typeof cause === "object") {
    const stack = withoutRunnerFrames(typeof cause.stack === "string" ? cause.stack : String(cause));
    const fields = Object.fromEntries(Object.entries(cause).filter(([key]) => key !== "stack" && key !== "message"));
    return Object.keys(fields).length > 0 ? `${stack}\n${inspect(fields, { depth: 4, colors: false })}` : stack;
  }
  const kind = error.failureType ? ` [${error.failureType}]` : "";
  return `${error.message ?? String(error)}${kind}${cause !== undefined && cause !== error.message ? `\n${String(cause)}` : ""}`;
}

/** Drops the stack frames inside Node's test runner: they are the same for every failure. */
function withoutRunnerFrames(text) {
  return text.split("\n").filter((line) => !/^\s+at (.* \()?node:(internal|async_hooks)/.test(line)).join("\n");
}

function indent(text, prefix) {
  return text.split("\n").map((line) => `${prefix}${line}`).join("\n");
}
