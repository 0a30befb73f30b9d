// The line-up: every library variant the workloads run, in table order. `module` is the file in
// this folder; child processes load an adapter by module + variant. Modules are imported
// dynamically so that a peer that fails to import (the redlock 5 beta, say) is reported as such
// instead of stopping the bench.
const MODULES = ["surelock.mjs", "redlock4.mjs", "redlock5.mjs", "sesame-redlock.mjs", "redis-semaphore.mjs", "floor.mjs"];

const loaded = new Map();

async function load(module) {
  if (!loaded.has(module)) {
    loaded.set(module, import(`./${module}`).then((m) => ({ m }), (error) => ({ error })));
  }
  return loaded.get(module);
}

/**
 * [{ id, module, variant, label }] for every library variant (the floor only when asked for),
 * and [{ module, error }] for modules that could not be imported.
 */
export async function lineUp({ floor = false } = {}) {
  const entries = [];
  const failed = [];
  for (const module of MODULES) {
    if (module === "floor.mjs" && !floor) continue;
    const { m, error } = await load(module);
    if (error) {
      failed.push({ module, error: String(error.message ?? error).split("\n")[0] });
      continue;
    }
    for (const v of m.variants) {
      entries.push({ id: `${module.replace(".mjs", "")}:${v.variant}`, module, variant: v.variant, label: v.label });
    }
  }
  return { entries, failed };
}

export async function createAdapter(entry) {
  const { m, error } = await load(entry.module);
  if (error) throw error;
  return m.create(entry.variant);
}
