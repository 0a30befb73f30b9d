// The fast tiers (unit, memory: `npm run test:fast`) run without servers or child processes. The
// runner names the tiers it runs in SURELOCK_TEST_TIERS; the helpers that start a server, a proxy
// or a process call this first, so a fast test that needs one fails at once, saying so.
const FAST = new Set(["unit", "memory"]);

export function assertSlowTier(what: string): void {
  const tiers = (process.env.SURELOCK_TEST_TIERS ?? "").split(",").filter(Boolean);
  if (tiers.length > 0 && tiers.every((t) => FAST.has(t))) {
    throw new Error(`${what}: a test of the ${tiers.join(" and ")} tier may not start one (move the file to another tier in scripts/test-tiers.mjs)`);
  }
}
