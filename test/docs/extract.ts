/**
 * Code blocks of a Markdown page, with what their info string says about them. The rules, which
 * every page under README.md and docs/ follows (test/docs/snippets.test.ts enforces them):
 *
 * - A ```ts / ```typescript / ```js / ```javascript block is a whole program. It is type-checked
 *   (strict, NodeNext, `import "surelock"` is this package; JavaScript as JavaScript is checked,
 *   without noImplicitAny, for libraries whose types NodeNext cannot find) and run against a
 *   throwaway redis-server whose URL is in REDIS_URL. It must end by itself (close what it opened).
 * - ```ts fragment — a piece of a program (names it does not declare): neither checked nor run.
 * - ```ts no-run — a whole program that needs what a test machine has not got (a Sentinel set at
 *   sentinel-1, a Cluster at redis-1): type-checked, not run.
 * - ```ts file=PATH — the block is the repository file PATH, byte for byte (the test checks it).
 *   Other blocks of the page import it as "./<its base name>.js"; it is checked, not run itself.
 * - ```ts imports=NAME:INSTALLED — the block imports the package NAME, which is installed here
 *   under the alias INSTALLED (redlock 5 beta is `redlock5` in devDependencies); the import is
 *   renamed for the check and the run, the page shows what a user writes.
 * - A ```text output block right after a runnable block is what it prints: compared line by
 *   line, `...` in a line standing for any text.
 *
 * Other languages (sh, json, text) are not programs here.
 */

export interface Block {
  /** The page, relative to the repository (README.md, docs/...). */
  readonly doc: string;
  /** Line of the first line of code (after the opening fence), 1-based. */
  readonly line: number;
  readonly lang: "ts" | "js";
  readonly mode: "run" | "fragment" | "no-run" | "file";
  /** For mode "file": the repository file it must equal. */
  readonly file: string | undefined;
  /** Package renames: name in the page -> name installed here. */
  readonly imports: ReadonlyMap<string, string>;
  readonly code: string;
  /** The `text output` block that follows, if any. */
  readonly output: string | undefined;
  /** The nearest heading above, and the sentence that introduces the block when it ends in ":". */
  readonly heading: string;
  readonly caption: string | undefined;
}

const LANGS: Readonly<Record<string, "ts" | "js">> = { ts: "ts", typescript: "ts", js: "js", javascript: "js" };
const FLAGS = new Set(["fragment", "no-run"]);

interface Fence {
  readonly info: string;
  readonly line: number;
  readonly body: string;
}

/** Every fenced block of `markdown`, in order (``` or ~~~, any length, as CommonMark has them). */
function fences(markdown: string): Fence[] {
  const lines = markdown.split("\n");
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const marker = open[1] as string;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j] as string;
      if (new RegExp(`^ {0,3}${marker[0] === "`" ? "`" : "~"}{${marker.length},}\\s*$`).test(line)) break;
      body.push(line);
    }
    out.push({ info: (open[2] as string).trim(), line: i + 2, body: body.join("\n") });
    i = j;
  }
  return out;
}

export function extractBlocks(doc: string, markdown: string): Block[] {
  const lines = markdown.split("\n");
  const all = fences(markdown);
  const blocks: Block[] = [];
  for (const [index, fence] of all.entries()) {
    const [word = "", ...flags] = fence.info.split(/\s+/);
    const lang = LANGS[word];
    if (!lang) continue;
    let mode: Block["mode"] = "run";
    let file: string | undefined;
    const imports = new Map<string, string>();
    for (const flag of flags) {
      if (FLAGS.has(flag)) mode = flag as "fragment" | "no-run";
      else if (flag.startsWith("file=")) {
        mode = "file";
        file = flag.slice("file=".length);
      } else if (/^imports=[^:]+:[^:]+$/.test(flag)) {
        const [name, installed] = flag.slice("imports=".length).split(":") as [string, string];
        imports.set(name, installed);
      } else {
        throw new Error(`${doc}:${fence.line - 1}: unknown flag ${JSON.stringify(flag)} in the info string ${JSON.stringify(fence.info)}`);
      }
    }
    const next = all[index + 1];
    const between = next ? lines.slice(fence.line - 1 + fence.body.split("\n").length + 1, next.line - 2) : [];
    const output = next && next.info === "text output" && between.every((l) => l.trim() === "") ? next.body : undefined;
    blocks.push({ doc, line: fence.line, lang, mode, file, imports, code: fence.body, output, ...context(lines, fence.line - 2) });
  }
  return blocks;
}

/** The heading above line `at` (0-based index of the opening fence), and the block's caption. */
function context(lines: readonly string[], at: number): { heading: string; caption: string | undefined } {
  let caption: string | undefined;
  for (let i = at - 1; i >= 0; i--) {
    const line = (lines[i] as string).trim();
    if (caption === undefined && line !== "" && !line.startsWith("#")) caption = line.endsWith(":") ? line.replace(/:$/, "") : "";
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) return { heading: heading[1] as string, caption: caption || undefined };
  }
  return { heading: "", caption: caption || undefined };
}

/** The block's code as checked and run: package renames applied, same lines. */
export function programOf(block: Block): string {
  let code = block.code;
  for (const [name, installed] of block.imports) {
    const quoted = new RegExp(`(["'])${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\1`, "g");
    code = code.replace(quoted, `"${installed}"`);
  }
  return `${code}\n`;
}

/** Whether `actual` (a program's stdout) is what the `text output` block says. */
export function outputMatches(expected: string, actual: string): boolean {
  const want = expected.trimEnd().split("\n");
  const got = actual.trimEnd().split("\n");
  if (want.length !== got.length) return false;
  return want.every((line, i) => {
    const pattern = line.trimEnd().split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    return new RegExp(`^${pattern}$`).test((got[i] as string).trimEnd());
  });
}
