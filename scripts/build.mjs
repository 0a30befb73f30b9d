// Builds the package: an ESM and a CommonJS bundle of src/index.ts and of src/testing/index.ts
// (surelock/testing), the CLI, and type declarations for both (the CJS ones under dist/cjs,
// whose package.json says "commonjs").
//
// The library bundles keep every package external: the library imports no Redis client, it
// uses the one it is given. The CLI is the one place that needs a client of its own, so its
// bundle carries ioredis and its dependencies inside it: `npx surelock` works without ioredis
// installed, and a user's own ioredis (of any version) is never loaded twice for it.
// dist/cli/bundled.json lists the packages in that bundle (THIRD_PARTY_NOTICES.md is made from it).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";
import { bundledPackages } from "./bundled-packages.mjs";

rmSync("dist", { recursive: true, force: true });
const common = { bundle: true, platform: "node", target: "node20", sourcemap: true };
const library = { ...common, packages: "external" };
// ioredis is CommonJS and calls require() for Node's built-ins; an ESM bundle has no require of
// its own, so the banner makes one (esbuild leaves such calls to a `require` in scope).
const cliBanner = [
  "#!/usr/bin/env node",
  'import { createRequire as __surelockCreateRequire } from "node:module";',
  "const require = __surelockCreateRequire(import.meta.url);",
].join("\n");

const [, , , , cli] = await Promise.all([
  build({ ...library, entryPoints: ["src/index.ts"], format: "esm", outfile: "dist/index.js" }),
  build({ ...library, entryPoints: ["src/index.ts"], format: "cjs", outfile: "dist/cjs/index.cjs" }),
  build({ ...library, entryPoints: ["src/testing/index.ts"], format: "esm", outfile: "dist/testing.js" }),
  build({ ...library, entryPoints: ["src/testing/index.ts"], format: "cjs", outfile: "dist/cjs/testing.cjs" }),
  build({
    ...common,
    entryPoints: ["src/cli/main.ts"],
    format: "esm",
    outfile: "dist/cli/main.js",
    banner: { js: cliBanner },
    metafile: true,
    // debug (under ioredis) tries it inside a try/catch for colours; leave it out of the bundle.
    external: ["supports-color"],
    // Third-party sources stay out of the map: it is for reading surelock's own stack traces.
    sourcesContent: false,
  }),
]);
writeFileSync("dist/cli/bundled.json", `${JSON.stringify(bundledPackages(cli.metafile), null, 2)}\n`);

execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
// The same declarations, read as CommonJS ones for `require` (TypeScript's node16/nodenext rules).
mkdirSync("dist/cjs", { recursive: true });
cpSync("dist/types", "dist/cjs", { recursive: true });
writeFileSync("dist/cjs/package.json", '{ "type": "commonjs" }\n');
