/** surelock/testing stays out of the library: nothing src/index.ts reaches imports src/testing. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";

function importsOf(file: string): string[] {
  const source = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of source.matchAll(/(?:import|export)[^"']*?from\s+["'](\.[^"']+)["']/g)) {
    out.push(join(dirname(file), (m[1] as string).replace(/\.js$/, ".ts")));
  }
  return out;
}

describe("surelock/testing boundary", () => {
  it("no module the library entry reaches lives under src/testing", () => {
    const seen = new Set<string>();
    const queue = ["src/index.ts"];
    while (queue.length > 0) {
      const file = queue.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      queue.push(...importsOf(file));
    }
    assert.ok(seen.size > 10, `only ${seen.size} modules found from src/index.ts`);
    const leaked = [...seen].map((f) => relative(".", f)).filter((f) => f.startsWith("src/testing"));
    assert.deepEqual(leaked, []);
  });
});
