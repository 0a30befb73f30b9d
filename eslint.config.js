import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { layerRules } from "./scripts/layers.mjs";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/scripts/lua.generated.ts", "src/postgres/sql.generated.ts", ".tmp/", ".readme-*/", "bench/results/", "docs/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A floating promise in lock code can be a lease nobody watches.
      "@typescript-eslint/no-floating-promises": ["error", {
        // node:test's describe/it return promises the runner itself awaits.
        allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["describe", "it", "test", "suite", "before", "after", "beforeEach", "afterEach"] }],
      }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  // Which part of src/ may import which (scripts/layers.mjs; CONTRIBUTING.md, Layers).
  ...layerRules(import.meta.dirname),
  {
    files: ["**/*.mjs", "**/*.js"],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly", clearTimeout: "readonly", performance: "readonly", Buffer: "readonly", AbortController: "readonly", setInterval: "readonly", clearInterval: "readonly" } },
  },
  // A jest test file, written as a CommonJS user writes one (test/runners).
  {
    files: ["**/*.jest.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", jest: "readonly", beforeEach: "readonly", test: "readonly", expect: "readonly" } },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
