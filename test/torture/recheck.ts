/**
 * Runs the checkers again on a kept run: `node --import tsx test/torture/recheck.ts <run dir>`
 * (the dir holding history.jsonl and end-state.json, as printed by a failing run).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { checkHistory } from "./checkers/index.js";
import { parseHistory } from "./history.js";
import type { SavedRun } from "./orchestrator.js";
import { minimalHistory, summarize } from "./report.js";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node --import tsx test/torture/recheck.ts <run dir>\n");
  process.exit(2);
}
const history = parseHistory(readFileSync(path.join(dir, "history.jsonl"), "utf8"));
const endFile = path.join(dir, "end-state.json");
// Without the end state (logs, counters, sweep) only the history-based checkers can judge.
const saved = existsSync(endFile) ? JSON.parse(readFileSync(endFile, "utf8")) as SavedRun : undefined;
if (!saved) process.stdout.write("(no end-state.json: fenced registers, counters' final values and the sweep are not checked)\n");
const { model, violations } = checkHistory(history,
  saved && { logs: new Map(saved.logs), counters: new Map(saved.counters), sweep: saved.sweep });
const failures = violations.filter((v) => v.severity === "violation");
const out: string[] = [`${saved ? `seed ${saved.options.seed}, ${saved.options.deployment}, ${saved.options.minutes} min: ` : ""}${history.length} events`];
out.push(...summarize(violations));
for (const [i, v] of failures.entries()) {
  out.push(`\n[${i + 1}/${failures.length}] ${v.checker}${v.lock ? ` ${v.lock}` : ""}${v.patterns ? ` (looks like: ${v.patterns.join(", ")})` : ""}`);
  out.push(`  ${v.message}`);
  if (process.argv.includes("--details")) out.push(...minimalHistory(model, v).map((l) => `    ${l}`));
}
process.stdout.write(`${out.join("\n")}\n`);
process.exitCode = failures.length === 0 ? 0 : 1;
