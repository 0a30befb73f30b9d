/**
 * The docs' code blocks as files a user would have: each page's blocks in a folder of their own
 * under .tmp/snippets/ (inside the repository, so `import "surelock"` resolves to this package
 * and the dev dependencies are there; .tmp/ is ignored by git and ESLint), one tsc program over
 * all of them, and a runner that runs one block with node + tsx against a given Redis.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { extractBlocks, outputMatches, programOf, type Block } from "./extract.js";
import { runProcess } from "../helpers/run-process.js";

export const ROOT = resolve(".");
const RUN_MS = 30_000;

/** README.md and every page under docs/, relative to the repository. */
export function docPages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : path.endsWith(".md") ? [path] : [];
    });
  return ["README.md", ...walk("docs").sort()];
}

export function blocksOf(pages: readonly string[]): Block[] {
  return pages.flatMap((page) => extractBlocks(page, readFileSync(page, "utf8")));
}

/** Where a block lives once laid out: `file=` blocks under their base name, others by line. */
export function fileOf(dir: string, block: Block): string {
  const folder = join(dir, block.doc.replace(/\.md$/, "").replace(/[^\w/-]/g, "_"));
  const name = block.file ? basename(block.file) : `block-${block.line}.${block.lang}`;
  return join(folder, name);
}

/** Writes every checked block (not fragments) into a fresh `dir`; returns block by file. */
export function layOut(dir: string, blocks: readonly Block[]): Map<string, Block> {
  rmSync(dir, { recursive: true, force: true });
  const byFile = new Map<string, Block>();
  for (const block of blocks) {
    if (block.mode === "fragment") continue;
    const file = fileOf(dir, block);
    if (byFile.has(file)) throw new Error(`${block.doc}:${block.line} and ${byFile.get(file)?.doc}:${byFile.get(file)?.line} would both be ${file}`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, programOf(block));
    byFile.set(file, block);
  }
  return byFile;
}

export interface Problem {
  readonly where: string;
  /** The block it is in, when it is in one. */
  readonly block: Block | undefined;
  message: string;
}

/**
 * Type-checks every laid-out block: the TypeScript blocks in one tsc program with the
 * repository's compiler options (strict, NodeNext). The JavaScript blocks, which exist for
 * libraries that ship no types NodeNext can find (redlock 4 and 5 beta), in a second program
 * that checks them as JavaScript is checked: without noImplicitAny, so an untyped library is
 * `any` rather than an error. Problems are reported at page:line.
 */
export async function typeCheck(dir: string, byFile: ReadonlyMap<string, Block>): Promise<Problem[]> {
  const extendsRoot = relative(dir, join(ROOT, "tsconfig.json"));
  const configs = [
    { name: "tsconfig.json", config: { extends: extendsRoot, compilerOptions: { noEmit: true }, include: ["**/*.ts"] } },
    {
      name: "tsconfig.js.json",
      config: {
        extends: extendsRoot,
        compilerOptions: { noEmit: true, allowJs: true, checkJs: true, noImplicitAny: false, useUnknownInCatchVariables: false },
        include: ["**/*.js"],
      },
    },
  ];
  const results = await Promise.all(configs.map(async ({ name, config }) => {
    writeFileSync(join(dir, name), `${JSON.stringify(config, null, 2)}\n`);
    return problemsOf(await tsc(join(dir, name)), byFile);
  }));
  return results.flat();
}

/** tsc's output for one project (nothing when it has no input files). */
async function tsc(project: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const r = await runProcess(process.execPath, [bin, "-p", project, "--pretty", "false"], { timeoutMs: 120_000 });
  // TS18003: no inputs were found (a tree without JavaScript blocks).
  return /error TS18003/.test(r.stdout) ? { code: 0, stdout: "", stderr: "" } : r;
}

function problemsOf(r: { code: number | null; stdout: string; stderr: string }, byFile: ReadonlyMap<string, Block>): Problem[] {
  const problems: Problem[] = [];
  for (const line of r.stdout.split("\n")) {
    const m = /^(.+?)\((\d+),(\d+)\): (error .*)$/.exec(line);
    const last = problems.at(-1);
    if (!m) {
      // The indented lines after an error are its explanation.
      if (last && /^\s/.test(line)) last.message += `\n${line}`;
      else if (line.trim() !== "") problems.push({ where: "tsc", block: undefined, message: line });
      continue;
    }
    const block = byFile.get(resolve(m[1] as string));
    const where = block ? `${block.doc}:${block.line + Number(m[2]) - 1}` : `${m[1]}:${m[2]}`;
    problems.push({ where, block, message: m[4] as string });
  }
  if (r.code !== 0 && problems.length === 0) problems.push({ where: "tsc", block: undefined, message: `exited with ${r.code}: ${r.stderr}` });
  return problems;
}

/** Runs one block as its page shows it; fails with what it printed, or if its output differs. */
export async function runBlock(dir: string, block: Block, redisUrl: string): Promise<string> {
  const file = fileOf(dir, block);
  const r = await runProcess(process.execPath, ["--import", "tsx", file], {
    cwd: ROOT,
    env: { REDIS_URL: redisUrl, NODE_OPTIONS: undefined },
    timeoutMs: RUN_MS,
  });
  const where = `${block.doc}:${block.line}`;
  if (r.code !== 0) throw new Error(`${where} exited with ${r.code ?? r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  if (block.output !== undefined && !outputMatches(block.output, r.stdout)) {
    throw new Error(`${where} printed\n${r.stdout}\nbut the page says it prints\n${block.output}`);
  }
  return r.stdout;
}

/** A test title for a block: page, heading and caption. */
export function titleOf(block: Block): string {
  return [`${block.doc}:${block.line}`, block.heading, block.caption].filter(Boolean).join(" — ");
}
