/** Output helpers: results go to stdout, diagnostics to stderr, every line prefixed by who speaks. */

/** Writes lines to stdout. */
export function print(...lines: string[]): void {
  for (const line of lines) process.stdout.write(`${line}\n`);
}

/** Writes `value` as indented JSON to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** One diagnostic line on stderr, as `surelock: <message>`. */
export function note(message: string): void {
  process.stderr.write(`surelock: ${message}\n`);
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
