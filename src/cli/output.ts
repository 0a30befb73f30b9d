/** Output helpers: results go to stdout, diagnostics to stderr, every line prefixed by who speaks. */
import { AsyncLocalStorage } from "node:async_hooks";

/** Where a run of the CLI writes: the process's streams, or a caller's (`main()` in a test or a tool). */
export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

const PROCESS_OUTPUT: CliOutput = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

// Each run's own output, without threading it through every command: two runs in one process
// (tests) each write to theirs.
const current = new AsyncLocalStorage<CliOutput>();

/** Runs `work` with its output (and that of everything it starts) going to `output`. */
export function withOutput<T>(output: CliOutput, work: () => T): T {
  return current.run(output, work);
}

function output(): CliOutput {
  return current.getStore() ?? PROCESS_OUTPUT;
}

/** Writes lines to stdout. */
export function print(...lines: string[]): void {
  for (const line of lines) output().stdout(`${line}\n`);
}

/** Writes `value` as indented JSON to stdout. */
export function printJson(value: unknown): void {
  output().stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** One diagnostic line on stderr, as `surelock: <message>`. */
export function note(message: string): void {
  output().stderr(`surelock: ${message}\n`);
}

/** Text on stderr as it is (a usage, a failure line that names its command). */
export function printError(text: string): void {
  output().stderr(text);
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(header: readonly string[] | undefined, rows: readonly (readonly string[])[]): string[] {
  const all = header ? [header, ...rows] : rows;
  const widths: number[] = [];
  for (const row of all) row.forEach((cell, i) => { widths[i] = Math.max(widths[i] ?? 0, cell.length); });
  return all.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ").trimEnd());
}

/** `"text"` with JSON escapes, so odd characters in keys cannot garble a line. */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/** `1 holder`, `3 holders`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
