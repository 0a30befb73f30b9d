// Which part of src/ may import which: the layer table, and the ESLint blocks that enforce it
// (eslint.config.js spreads `layerRules()`; CONTRIBUTING.md explains the layers).
//
// The library is one chain of layers: a file may import its own layer and every layer below it,
// never one above, and never a layer its entry skips (the primitives skip the scripts, the
// protocol and the quorum, which they reach only through the store's typed operations). Four parts stand beside the chain: surelock/testing (src/testing), the adapter kit
// (src/adapter-kit), the OpenTelemetry bridge (src/otel) and the command line (src/cli), each with a short list of what it may import. The rule is ESLint's own
// no-restricted-imports, one regex per place a file may not reach, written relative to its folder.
import { readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/** The chain, bottom first. A member ending in "/" is a folder. */
export const CHAIN = [
  // The channel messages' grammar (src/protocol/channel.ts) is read by the waiting room and by an
  // election's watchers alike, so it stands at the bottom, apart from the rest of the protocol.
  {
    name: "base",
    members: [
      "src/errors.ts", "src/validate.ts", "src/clock.ts", "src/deadline.ts", "src/keys.ts", "src/ids.ts", "src/diagnostics.ts", "src/protocol/channel.ts",
    ],
  },
  // The Lua sources, generated into lua.generated.ts, and the low-level binding of KEYS and ARGV.
  { name: "scripts", members: ["src/scripts/"] },
  { name: "adapters", members: ["src/adapters/"] },
  // The store's vocabulary: what a Store takes and answers, which the protocol encodes.
  { name: "store-types", members: ["src/store/types.ts"] },
  // The lock protocol's encoding: each operation's script call and the reading of its reply, one
  // module per lock family. The stores dispatch to it; nothing above them sees it.
  { name: "protocol", members: ["src/protocol/"] },
  // The fencing guard talks to Redis through an endpoint, like a store does; nothing below uses it.
  // The etcd store (src/etcd/) is a store of its own kind, over the etcd3 client rather than an endpoint.
  { name: "store", members: ["src/store/", "src/guard.ts", "src/etcd/"] },
  // The PostgreSQL store: its own protocol (PL/pgSQL) over a pg Pool, on the base layer only.
  { name: "postgres", members: ["src/postgres/"] },
  { name: "quorum", members: ["src/quorum/"] },
  { name: "lease", members: ["src/lease/"] },
  { name: "waiting", members: ["src/waiting/"] },
  // What every primitive of one Surelock shares: the primitives are built on it.
  // The engine seam (src/engine.ts) and its two implementations: Redis's runtime, and the named-store
  // engine that runs the same primitives on PostgreSQL and etcd (src/named/).
  { name: "runtime", members: ["src/engine.ts", "src/runtime.ts", "src/named/"] },
  // A primitive speaks to a store through its typed operations: the protocol's scripts and their
  // encoding, and the quorum's voting, stay below that seam, whichever store runs it.
  { name: "primitives", members: ["src/primitives/"], skips: ["scripts", "protocol", "quorum"] },
  { name: "facade", members: ["src/surelock.ts"] },
  // Operators' reads and forced releases (inspectKey, forceRelease): scripts over an endpoint, beside the facade.
  { name: "admin", members: ["src/admin.ts"] },
  { name: "index", members: ["src/index.ts"] },
];

/** Beside the chain: each may import itself and what `may` lists, nothing else of src/. */
export const SIDES = [
  {
    name: "testing",
    members: ["src/testing/"],
    // The adapter contract it implements, what users get, and the adapter kit it re-exports.
    may: ["src/adapters/types.ts", "src/index.ts", "src/adapter-kit/index.ts"],
  },
  {
    name: "adapter-kit",
    members: ["src/adapter-kit/"],
    // The contract it checks adapters against, and the library it runs over them.
    may: ["src/adapters/types.ts", "src/index.ts"],
  },
  {
    name: "otel",
    members: ["src/otel/"],
    // The message types it reads off the channels (type imports only: it subscribes by name).
    may: ["src/index.ts"],
  },
  {
    name: "cli",
    members: ["src/cli/"],
    may: [
      "src/index.ts",
      // Public classes taken from their own modules.
      "src/surelock.ts", "src/errors.ts", "src/diagnostics.ts", "src/lease/lease.ts",
      // Named internals: key names (list's SCAN patterns, exec's messages) and the limits on
      // durations. Reads and forced releases go through the package's inspectKey and forceRelease.
      "src/keys.ts", "src/validate.ts",
    ],
  },
];

const LAYERS = [
  ...CHAIN.map((layer, i) => {
    const below = CHAIN.slice(0, i + 1).filter((l) => !(layer.skips ?? []).includes(l.name));
    return { ...layer, may: below.flatMap((l) => l.members), mayText: `layers ${below.map((l) => l.name).join(", ")}` };
  }),
  ...SIDES.map((side) => ({ ...side, may: [...side.members, ...side.may], mayText: `only ${side.members.join(", ")} and ${side.may.join(", ")}` })),
];

const within = (file, member) => (member.endsWith("/") ? file.startsWith(member) : file === member);

/** Every TypeScript source under src/, as "src/…" paths. */
export function sourceFiles(root, dir = "src") {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(root, path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The layer of a src/ file; throws for a file no layer claims, so that a new folder cannot slip past the rules. */
export function layerOf(file) {
  const layer = LAYERS.find((l) => l.members.some((m) => within(file, m)));
  if (!layer) throw new Error(`${file} is in no layer: add it to CHAIN or SIDES in scripts/layers.mjs (see CONTRIBUTING.md, Layers)`);
  return layer;
}

/**
 * The places under src/ that `file` may not import: whole members where nothing inside is allowed,
 * single files where something is (src/testing may take src/adapters/types.ts, not the rest of src/adapters/).
 */
function forbiddenFor(file, files) {
  const layer = layerOf(file);
  const ok = (target) => layer.may.some((m) => within(target, m));
  const places = [];
  for (const other of LAYERS) {
    for (const member of other.members) {
      const inside = files.filter((f) => within(f, member));
      if (inside.every(ok)) continue;
      if (inside.some(ok)) places.push(...inside.filter((f) => !ok(f)).map((f) => ({ path: f, layer: other })));
      else places.push({ path: member, layer: other });
    }
  }
  return places;
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The regex that matches an import specifier, written in `fromDir`, reaching `place`. */
function specifierPattern(fromDir, place) {
  let spec = relative(fromDir, place.path.replace(/\/$/, "")) || ".";
  if (!spec.startsWith(".")) spec = `./${spec}`;
  return place.path.endsWith("/") ? `^${escape(spec)}/` : `^${escape(spec.replace(/\.ts$/, ""))}\\.js$`;
}

/** Flat-config blocks, one per folder and layer, each with its no-restricted-imports patterns. */
export function layerRules(root) {
  const files = sourceFiles(root);
  const groups = new Map();
  for (const file of files) {
    const layer = layerOf(file);
    const dir = dirname(file);
    const patterns = forbiddenFor(file, files).map((place) => ({
      regex: specifierPattern(dir, place),
      message: `${layer.name} may not import ${place.path} (${place.layer.name}); it may import ${layer.mayText}. See CONTRIBUTING.md, Layers.`,
    }));
    const id = `${dir} ${layer.name} ${JSON.stringify(patterns)}`;
    const group = groups.get(id) ?? { files: [], patterns };
    group.files.push(file);
    groups.set(id, group);
  }
  return [...groups.values()].map((g) => ({ files: g.files, rules: { "no-restricted-imports": ["error", { patterns: g.patterns }] } }));
}
