// docs/architecture.md is a map of the repository: every path it names (in backticks, or as a
// relative link) must exist, so a file that moves or goes takes the map with it.
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";

const DOC = "docs/architecture.md";
const text = readFileSync(DOC, "utf8");

/** Top-level places a repository path in the page starts with. */
const ROOTS = ["src/", "test/", "scripts/", "docs/", "bench/", "model/", "examples/"];
const ROOT_FILES = ["eslint.config.js", "package.json", "README.md", "CONTRIBUTING.md", "CHANGELOG.md"];

/**
 * Every repository path the page names (a folder ends in "/"): a `code span`, or the first word of
 * a line in a fenced block (the walk of one call is such a block).
 */
function namedPaths(page: string): string[] {
  const spans = [...page.matchAll(/`([^`\n]+)`/g)].map((m) => (m[1] as string).trim());
  const blockLines = [...page.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].flatMap((m) => (m[1] as string).split("\n"));
  const firstWords = blockLines.map((line) => line.trim().split(/\s+/)[0] ?? "");
  return [...spans, ...firstWords].filter((s) => /^[\w./-]+$/.test(s) && (ROOTS.some((r) => s.startsWith(r)) || ROOT_FILES.includes(s)));
}

/** Every relative Markdown link of the page, as a path from the repository root (anchor dropped). */
function linkedPaths(page: string): string[] {
  return [...page.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => join(dirname(DOC), target));
}

describe("docs/architecture.md", () => {
  it("names the paths of the house, and every one exists (a folder as a folder)", () => {
    const paths = namedPaths(text);
    assert.ok(paths.length > 100, `only ${paths.length} paths found: the extraction broke`);
    const missing = paths.filter((p) => !existsSync(p) || (p.endsWith("/") && !statSync(p).isDirectory()));
    assert.deepEqual([...new Set(missing)], []);
  });

  it("links only pages that exist", () => {
    const links = linkedPaths(text);
    assert.ok(links.length >= 5);
    assert.deepEqual(links.filter((p) => !existsSync(p)), []);
  });

  it("tells a missing path from a present one", () => {
    assert.deepEqual(namedPaths("see `src/engine.ts`, `src/no-such-file.ts`, `npm run build`, `test/helpers/`\n\n```text\nsrc/runtime.ts   obtain\n```\n"),
      ["src/engine.ts", "src/no-such-file.ts", "test/helpers/", "src/runtime.ts"]);
    assert.equal(existsSync("src/no-such-file.ts"), false);
  });
});
