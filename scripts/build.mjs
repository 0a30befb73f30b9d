// Builds the package: an ESM and a CommonJS bundle of src/index.ts and of src/testing/index.ts
// (surelock/testing), the CLI, and type declarations for both (the CJS ones under dist/cjs,
// whose package.json says "commonjs").
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
const common = { bundle: true, platform: "node", target: "node20", sourcemap: true, packages: "external" };
await Promise.all([
  build({ ...common, entryPoints: ["src/index.ts"], format: "esm", outfile: "dist/index.js" }),
  build({ ...common, entryPoints: ["src/index.ts"], format: "cjs", outfile: "dist/cjs/index.cjs" }),
  build({ ...common, entryPoints: ["src/testing/index.ts"], format: "esm", outfile: "dist/testing.js" }),
  build({ ...common, entryPoints: ["src/testing/index.ts"], format: "cjs", outfile: "dist/cjs/testing.cjs" }),
  build({ ...common, entryPoints: ["src/cli/main.ts"], format: "esm", outfile: "dist/cli/main.js", banner: { js: "#!/usr/bin/env node" } }),
]);
execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
// The same declarations, read as CommonJS ones for `require` (TypeScript's node16/nodenext rules).
mkdirSync("dist/cjs", { recursive: true });
cpSync("dist/types", "dist/cjs", { recursive: true });
writeFileSync("dist/cjs/package.json", '{ "type": "commonjs" }\n');
