// The public API as committed reports: etc/surelock.api.md (the `surelock` entry),
// etc/surelock-testing.api.md (`surelock/testing`), etc/surelock-adapter-kit.api.md
// (`surelock/adapter-kit`) and etc/surelock-otel.api.md (`surelock/otel`), made by API Extractor from the built
// declarations in dist/types (run `npm run build` first; the CJS declarations are copies of them).
//
//   node scripts/api-report.mjs --write   regenerates the committed reports (`npm run api`)
//   node scripts/api-report.mjs --check   exits 1 with a diff when the declarations differ from them
//
// Both modes write the fresh reports to .tmp/api/ (gitignored) first; the diff is our own, because
// API Extractor only says that a report changed, not how.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";
import { unifiedDiff } from "./line-diff.mjs";

const root = resolve(import.meta.dirname, "..");
const configPath = join(root, "etc/api-extractor.json");
const entries = [
  { name: "surelock", types: "dist/types/index.d.ts", report: "surelock" },
  { name: "surelock/testing", types: "dist/types/testing/index.d.ts", report: "surelock-testing" },
  { name: "surelock/adapter-kit", types: "dist/types/adapter-kit/index.d.ts", report: "surelock-adapter-kit" },
  { name: "surelock/otel", types: "dist/types/otel/index.d.ts", report: "surelock-otel" },
];

/** Runs API Extractor for one entry point; returns the fresh report's path under .tmp/api/. */
function extract(entry) {
  const config = ExtractorConfig.loadFile(configPath);
  config.mainEntryPointFilePath = `<projectFolder>/${entry.types}`;
  config.apiReport = { ...config.apiReport, reportFileName: entry.report };
  const prepared = ExtractorConfig.prepare({
    configObject: config,
    configObjectFullPath: configPath,
    packageJsonFullPath: join(root, "package.json"),
  });
  const problems = [];
  const result = Extractor.invoke(prepared, {
    // Never let API Extractor copy the report into etc/: this script decides that.
    localBuild: false,
    messageCallback(message) {
      message.handled = true;
      // The "report changed / missing" notices are this script's business; show the rest.
      if (message.messageId.startsWith("console-api-report")) return;
      if (message.logLevel === "error" || message.logLevel === "warning") problems.push(`${entry.name}: ${message.formatMessageWithLocation(root)}`);
    },
  });
  if (result.errorCount > 0) throw new Error(`API Extractor failed for ${entry.name}:\n${problems.join("\n")}`);
  for (const problem of problems) console.error(problem);
  return { fresh: prepared.reportTempFilePath, committed: prepared.reportFilePath };
}

const mode = process.argv[2];
if (mode !== "--write" && mode !== "--check") {
  console.error("usage: node scripts/api-report.mjs --write | --check");
  process.exit(2);
}
const missing = entries.filter((e) => !existsSync(join(root, e.types)));
if (missing.length > 0) {
  console.error(`no declarations at ${missing.map((e) => e.types).join(", ")}: run \`npm run build\` first`);
  process.exit(2);
}
mkdirSync(join(root, ".tmp/api"), { recursive: true });

let differs = 0;
for (const entry of entries) {
  const { fresh, committed } = extract(entry);
  const now = readFileSync(fresh, "utf8");
  const before = existsSync(committed) ? readFileSync(committed, "utf8") : "";
  const where = committed.slice(root.length + 1);
  if (now === before) {
    console.log(`${where}: unchanged`);
  } else if (mode === "--write") {
    copyFileSync(fresh, committed);
    console.log(`${where}: updated; review it and commit it with the change`);
  } else {
    differs++;
    console.log(`${where} differs from the built declarations of ${entry.name} (- committed, + built):`);
    console.log(unifiedDiff(before, now, { from: `${where} (committed)`, to: `${where} (built)` }));
  }
}
if (differs > 0) {
  console.log("The public API changed. If that is intended, run `npm run api` and commit etc/*.api.md with the change.");
  process.exit(1);
}
