/**
 * The protocol models (model/*.pml) checked with spin through scripts/model-check.mjs: what must
 * hold holds after a complete search (and reaches what it is about), what must fail fails with a
 * counterexample. Needs spin: a machine without it fails here, with the command that installs it.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";

interface Witness {
  readonly events: readonly string[];
  readonly reached: boolean;
}

interface CheckResult {
  readonly name: string;
  readonly model: string;
  readonly property: string;
  readonly expect: "holds" | "fails";
  readonly outcome: "holds" | "fails" | "incomplete" | "model-error";
  readonly states: number;
  readonly seconds: number;
  readonly witness?: readonly Witness[];
  readonly counterexample?: { readonly steps: readonly string[]; readonly state: readonly string[] };
}

function isCheckResult(value: unknown): value is CheckResult {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return typeof r.name === "string" && typeof r.model === "string" && typeof r.property === "string" &&
    (r.expect === "holds" || r.expect === "fails") && typeof r.outcome === "string" && typeof r.states === "number";
}

const spinInstalled = (): boolean => {
  const spin = spawnSync("spin", ["-V"], { encoding: "utf8" });
  return spin.error === undefined && spin.status === 0;
};

describe("protocol model (spin)", { timeout: 900_000 }, () => {
  it("spin is installed: the model checks need it", () => {
    assert.ok(spinInstalled(),
      "spin is not installed. Install it with: apt-get install -y spin (Debian/Ubuntu; needs gcc too). " +
      ".ci/run installs it when it is missing.");
  });

  it("every check comes out as expected: what must hold holds, the contrasts fail", { timeout: 900_000 }, () => {
    const run = spawnSync(process.execPath, ["scripts/model-check.mjs", "--json"], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.notEqual(run.status, 2, `the model checker is missing: ${run.stderr.trim()}`);
    const parsed: unknown = JSON.parse(run.stdout);
    assert.ok(Array.isArray(parsed) && parsed.every(isCheckResult), "the runner's --json output has the expected shape");
    const results = parsed as CheckResult[];
    const wrong = results.filter((r) => r.outcome !== r.expect || (r.witness ?? []).some((w) => !w.reached));
    assert.deepEqual(wrong.map((r) => `${r.name}: ${r.outcome}, expected ${r.expect}`), []);
    assert.equal(run.status, 0, run.stderr);

    for (const r of results) {
      assert.ok(r.states > 0, `${r.name} explored states`);
      if (r.expect === "holds") assert.ok((r.witness ?? []).length > 0, `${r.name} names what its runs must reach`);
      else assert.ok((r.counterexample?.steps.length ?? 0) > 0, `${r.name} comes with a counterexample`);
    }
    const byName = new Map(results.map((r) => [r.name, r]));
    // The contrasts the brief asks for: the old protocol loses lease exclusion to a replayed
    // release of a re-entered lock and to extend racing the renewal.
    assert.equal(byName.get("old/nested-release-replayed")?.property, "exclusion");
    assert.equal(byName.get("old/extend-racing-renewal")?.property, "exclusion");
    // Exclusion holds for the new protocol with two and three clients, and fails only when an
    // assumption is broken.
    for (const name of ["new/reentry-and-release-replays", "new/renewal-and-extend-race", "new/three-clients"]) {
      assert.equal(byName.get(name)?.outcome, "holds", name);
    }
    for (const name of ["new/clock-beyond-drift", "new/commands-out-of-order"]) {
      assert.equal(byName.get(name)?.outcome, "fails", name);
    }
    // Multi-key holds (issue 24): with validity the shortest key's PTTL, no two clients believe
    // they hold one key through different holds, joins by owner included; with the first key's
    // PTTL a joiner believes past the other key's expiry.
    for (const name of ["multi-key/join-by-owner", "multi-key/multi-renewals", "multi-key/releases"]) {
      assert.equal(byName.get(name)?.outcome, "holds", name);
    }
    assert.equal(byName.get("multi-key-old/first-key-pttl")?.property, "exclusion");
    assert.equal(byName.get("multi-key-old/first-key-pttl")?.outcome, "fails");
  });
});
