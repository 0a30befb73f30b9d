// Builds the package: an ESM and a CommonJS bundle of src/index.ts, of src/testing/index.ts
// (surelock/testing), of src/adapter-kit/index.ts (surelock/adapter-kit) and of src/otel/index.ts
// (surelock/otel, which keeps @opentelemetry/api external like every package), the CLI, and type
// declarations for all (the CJS ones under dist/cjs, whose package.json says "commonjs").
//
// surelock/testing and surelock/adapter-kit import the main entry (and testing the kit) as the
// built files beside them, never a copy: one library at run time, so `instanceof` and shared
// state hold across entries. No source maps: the bundles are not minified, and maps would point
// at src/, which the package does not ship.
//
// The library bundles keep every package external: the library imports no Redis client, it
// uses the one it is given. The CLI is the one place that needs a client of its own, so its
// bundle carries ioredis and its dependencies inside it: `npx surelock` works without ioredis
// installed, and a user's own ioredis (of any version) is never loaded twice for it.
// dist/cli/bundled.json lists the packages in that bundle (THIRD_PARTY_NOTICES.md is made from it).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { build } from "esbuild";
import { bundledPackages } from "./bundled-packages.mjs";

rmSync("dist", { recursive: true, force: true });
const common = { bundle: true, platform: "node", target: "node20" };
const library = { ...common, packages: "external" };

/** Resolves imports of these sources to the built entry files beside the bundle (".js" or ".cjs"). */
const entriesOutside = (extension, entries) => ({
  name: "entries-outside",
  setup(b) {
    b.onResolve({ filter: /\/index\.js$/ }, (args) => {
      const target = resolve(args.resolveDir, args.path).replace(/\.js$/, ".ts");
      const entry = entries[target];
      return entry ? { path: `./${entry}${extension}`, external: true } : undefined;
    });
  },
});
const main = { [resolve("src/index.ts")]: "index" };
const kit = { [resolve("src/adapter-kit/index.ts")]: "adapter-kit" };
const sideEntry = (name, source, outside) => [
  build({ ...library, entryPoints: [source], format: "esm", outfile: `dist/${name}.js`, plugins: [entriesOutside(".js", outside)] }),
  // CommonJS loads wasmoon with require(): an import() in a CommonJS file fails under jest's module system.
  build({ ...library, entryPoints: [source], format: "cjs", outfile: `dist/cjs/${name}.cjs`, plugins: [entriesOutside(".cjs", outside)],
    supported: { "dynamic-import": false } }),
];
// ioredis is CommonJS and calls require() for Node's built-ins; an ESM bundle has no require of
// its own, so the banner makes one (esbuild leaves such calls to a `require` in scope).
const cliBanner = [
  "#!/usr/bin/env node",
  'import { createRequire as __surelockCreateRequire } from "node:module";',
  "const require = __surelockCreateRequire(import.meta.url);",
].join("\n");

const [cli] = await Promise.all([
  build({
    ...common,
    entryPoints: ["src/cli/main.ts"],
    format: "esm",
    outfile: "dist/cli/main.js",
    banner: { js: cliBanner },
    metafile: true,
    // debug (under ioredis) tries it inside a try/catch for colours; leave it out of the bundle.
    external: ["supports-color"],
  }),
  build({ ...library, entryPoints: ["src/index.ts"], format: "esm", outfile: "dist/index.js" }),
  build({ ...library, entryPoints: ["src/index.ts"], format: "cjs", outfile: "dist/cjs/index.cjs" }),
  ...sideEntry("testing", "src/testing/index.ts", { ...main, ...kit }),
  ...sideEntry("adapter-kit", "src/adapter-kit/index.ts", main),
  ...sideEntry("otel", "src/otel/index.ts", main),
]);
writeFileSync("dist/cli/bundled.json", `${JSON.stringify(bundledPackages(cli.metafile), null, 2)}\n`);

execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
// The same declarations, read as CommonJS ones for `require` (TypeScript's node16/nodenext rules).
mkdirSync("dist/cjs", { recursive: true });
cpSync("dist/types", "dist/cjs", { recursive: true });
writeFileSync("dist/cjs/package.json", '{ "type": "commonjs" }\n');
