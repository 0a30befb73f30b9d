// THIRD_PARTY_NOTICES.md: the packages bundled into the CLI (dist/cli/bundled.json, written by
// the build), each with its version, license and license text as the package ships it.
//   node scripts/third-party-notices.mjs          rewrites THIRD_PARTY_NOTICES.md
//   node scripts/third-party-notices.mjs --check  exits 1 if it is out of date
// test/package.test.ts runs the check, so a changed dependency cannot ship with stale notices.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const NOTICES_FILE = "THIRD_PARTY_NOTICES.md";

/** The text THIRD_PARTY_NOTICES.md should have for the packages in `bundled`. */
export function renderNotices(bundled) {
  const lines = [
    "# Third-party notices",
    "",
    "The `surelock` command (`dist/cli/main.js`) is one file that contains the packages below, so",
    "that it runs without a Redis client installed. The library itself (`dist/index.js`,",
    "`dist/cjs/index.cjs`) contains no third-party code and imports no package.",
    "",
    "This file is generated from the build's list of bundled files: `npm run build`, then",
    "`node scripts/third-party-notices.mjs`.",
    "",
    "| package | version | license |",
    "|---|---|---|",
    ...bundled.map((p) => `| ${p.name} | ${p.version} | ${p.license} |`),
  ];
  for (const p of bundled) {
    const files = readdirSync(p.dir).filter((f) => /^(licen[cs]e|notice|copying)(\.(md|txt))?$/i.test(f)).sort();
    if (files.length === 0) throw new Error(`${p.name} ${p.version} ships no license file in ${p.dir}`);
    lines.push("", `## ${p.name} ${p.version} (${p.license})`);
    for (const file of files) {
      // A fence longer than any backtick run inside keeps the text verbatim.
      const text = readFileSync(join(p.dir, file), "utf8").replace(/\r\n/g, "\n").trimEnd();
      const fence = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
      lines.push("", `${file}:`, "", `${fence}text`, text, fence);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** The notices for the current build (needs dist/cli/bundled.json). */
export function currentNotices() {
  return renderNotices(JSON.parse(readFileSync("dist/cli/bundled.json", "utf8")));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const text = currentNotices();
  if (process.argv.includes("--check")) {
    if (readFileSync(NOTICES_FILE, "utf8") !== text) {
      console.error(`${NOTICES_FILE} is out of date: run node scripts/third-party-notices.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(NOTICES_FILE, text);
  }
}
