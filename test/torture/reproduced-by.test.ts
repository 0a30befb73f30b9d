/**
 * Every regression seed (regressions.json) names the deterministic tests that force what it found
 * (`reproducedBy`: "<test file> › <test name>"), and each of them exists: the file is there, it
 * declares a test of that name (a name built in a template literal matches with its `${}` parts
 * read as wildcards), and it is not a random run of the soak tier itself.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { tierOf } from "../../scripts/test-tiers.mjs";

interface Entry {
  readonly seed: number;
  readonly deployment: string;
  readonly reproducedBy?: unknown;
}

const regressions = JSON.parse(readFileSync(new URL("./regressions.json", import.meta.url), "utf8")) as readonly Entry[];

/** A path relative to the repository, as a file URL (the test may run from anywhere). */
const inRepo = (file: string): URL => new URL(`../../${file}`, import.meta.url);

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** What the names of the `it(...)` / `test(...)` calls in `source` match: each name exactly, a template's `${}` parts as anything. */
function testNames(source: string): RegExp[] {
  const names: RegExp[] = [];
  for (const m of source.matchAll(/\b(?:it|test)\(\s*(["'`])((?:\\.|(?!\1)[^\\])*)\1/g)) {
    const [, quote, body] = m as unknown as [string, string, string];
    const unescaped = (part: string): string => part.replace(/\\(.)/g, "$1");
    const pattern = quote === "`"
      ? body.split(/\$\{[^}]*\}/).map((part) => escape(unescaped(part))).join(".+?")
      : escape(unescaped(body));
    names.push(new RegExp(`^${pattern}$`, "u"));
  }
  return names;
}

/** Why `ref` names no test, or undefined when it does. */
function missing(ref: string): string | undefined {
  const at = ref.indexOf(" › ");
  if (at < 0) return "not \"<test file> › <test name>\"";
  const [file, name] = [ref.slice(0, at), ref.slice(at + " › ".length)];
  if (!file.endsWith(".test.ts")) return `${file} is not a test file`;
  if (!existsSync(inRepo(file))) return `${file} does not exist`;
  if (tierOf(file) === "soak") return `${file} is of the soak tier (a random run, not a test of the interleaving)`;
  if (!testNames(readFileSync(inRepo(file), "utf8")).some((re) => re.test(name))) return `${file} declares no test named ${JSON.stringify(name)}`;
  return undefined;
}

describe("regressions.json: every seed names the deterministic tests of what it found", () => {
  it("every entry names at least one test, and each named test exists", () => {
    assert.ok(regressions.length > 0);
    const problems: string[] = [];
    for (const entry of regressions) {
      const refs = entry.reproducedBy;
      if (!Array.isArray(refs) || refs.length === 0 || !refs.every((r) => typeof r === "string")) {
        problems.push(`seed ${entry.seed} (${entry.deployment}): no reproducedBy list of tests`);
        continue;
      }
      for (const ref of refs as string[]) {
        const why = missing(ref);
        if (why) problems.push(`seed ${entry.seed} (${entry.deployment}): ${why}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("tells a test that is not there from one that is, names built in templates included", () => {
    const source = [
      "it(\"a plain name, with \\\"quotes\\\"\", () => {});",
      "void it('single quoted', () => {});",
      "  it(`replayed (resend ${on ? \"on\" : \"off\"})`, async () => {});",
    ].join("\n");
    const names = testNames(source);
    const has = (name: string): boolean => names.some((re) => re.test(name));
    assert.ok(has("a plain name, with \"quotes\""));
    assert.ok(has("single quoted"));
    assert.ok(has("replayed (resend on)"));
    assert.ok(!has("a plain name"), "a prefix is not the name");
    assert.ok(!has("replayed (resend on) twice"));
    assert.match(missing("test/fast/reentry.test.ts › no such test") ?? "", /declares no test named/);
    assert.match(missing("test/torture/regressions.test.ts › anything") ?? "", /soak tier/);
    assert.match(missing("test/nowhere.test.ts › anything") ?? "", /does not exist/);
  });
});
