// Which npm packages an esbuild bundle contains, read from its metafile: for the CLI's list of
// bundled third-party code (dist/cli/bundled.json, THIRD_PARTY_NOTICES.md).
import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The packages whose files went into the bundle, sorted by name: `{ name, version, license, dir }`,
 * `dir` being the package's folder relative to the repository.
 */
export function bundledPackages(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    // The innermost node_modules/ decides (a nested copy is a package of its own).
    const at = input.lastIndexOf("node_modules/");
    if (at < 0) continue;
    const rest = input.slice(at + "node_modules/".length).split("/");
    const name = rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
    dirs.add(`${input.slice(0, at)}node_modules/${name}`);
  }
  return [...dirs]
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      return { name: pkg.name, version: pkg.version, license: pkg.license ?? "UNKNOWN", dir };
    })
    .sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}
